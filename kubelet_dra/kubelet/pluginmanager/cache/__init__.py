"""The plugin manager's caches (desired and actual state of the world) and what a plugin handler offers."""
