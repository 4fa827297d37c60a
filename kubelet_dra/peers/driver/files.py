"""Removing the driver's files (they are written whole by ``datafiles.replace_file``: its hidden temp name
starts with a dot, which CDI and the plugin watcher both ignore)."""

from __future__ import annotations

import contextlib
import socket
from pathlib import Path


def remove(path: Path) -> None:
    """Delete ``path`` if it exists."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def leave_stale_socket(path: Path | str) -> None:
    """Leave a socket file nobody listens on, as a crashed process does."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(path))
