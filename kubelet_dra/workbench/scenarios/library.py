"""The scenario library that ships with kubelet-dra: ``scenarios/`` of a clone, installed as ``kubelet_dra/scenarios``
(the package links to it), so ``replay --library`` runs from a wheel as from a checkout."""

from __future__ import annotations

from pathlib import Path

from kubelet_dra.peers.errors import ConfigError

LIBRARY_DIR = Path(__file__).resolve().parents[2] / "scenarios"


def library_files() -> list[str]:
    """Every scenario file of the library, in name order."""
    files = sorted(str(path) for path in LIBRARY_DIR.glob("*.yaml"))
    if not files:
        raise ConfigError(
            "the scenario library is not installed",
            where=str(LIBRARY_DIR),
            fix="reinstall kubelet-dra (pip install --force-reinstall kubelet-dra), or give scenario files",
        )
    return files
