"""Files only their owner may read: private keys, tokens and kubeconfigs carrying credentials."""

from __future__ import annotations

import os
from pathlib import Path


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically with mode 0600, so no reader sees half a file or a wider mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.unlink(missing_ok=True)
    with open(partial, "xb", opener=lambda name, flags: os.open(name, flags, 0o600)) as file:
        file.write(data)
    partial.replace(path)
