"""Removing the driver's files (they are written whole by ``datafiles.replace_file``: its hidden temp name
starts with a dot, which CDI and the plugin watcher both ignore)."""

from __future__ import annotations

import contextlib
from pathlib import Path


def remove(path: Path) -> None:
    """Delete ``path`` if it exists."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
