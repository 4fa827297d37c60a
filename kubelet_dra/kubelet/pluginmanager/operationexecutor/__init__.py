"""One register or unregister operation per socket (the executor) and its steps (the generator)."""
