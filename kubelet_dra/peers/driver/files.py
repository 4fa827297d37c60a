"""Atomic file replacement, so a crash never leaves half a CDI spec or checkpoint behind."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write ``data`` to a hidden temporary file beside ``path``, fsync it, then rename it over ``path``.

    The temporary name starts with a dot, which CDI and the plugin watcher both ignore.
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def remove(path: Path) -> None:
    """Delete ``path`` if it exists."""
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
