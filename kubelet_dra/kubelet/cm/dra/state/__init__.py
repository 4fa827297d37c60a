"""The DRA manager's checkpoint: the file format (``checkpoint``) and its group-committed writer (``checkpointer``)."""
