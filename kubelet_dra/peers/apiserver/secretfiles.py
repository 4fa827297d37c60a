"""Files only their owner may read: private keys, tokens and kubeconfigs carrying credentials."""

from __future__ import annotations

from pathlib import Path

from kubelet_dra.peers.datafiles import private_dir, replace_file


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically with mode 0600 (its directory 0700 when made for it), so no reader
    sees half a file or a wider mode."""
    private_dir(path.parent)
    replace_file(path, data)
