"""Many simulated nodes in one process: node name patterns, per-node layouts and drivers, the live table.

The names load on first use: a many-node driver process needs only the name patterns, and importing the
fleet loads the whole node (over a second of a driver process's start on a busy machine).
"""

from __future__ import annotations

import importlib
from typing import Any

NAMES: dict[str, str] = {
    "Fleet": "kubelet_dra.workbench.fleet.fleet",
    "NodeLayout": "kubelet_dra.workbench.fleet.fleet",
    "NodeRow": "kubelet_dra.workbench.fleet.fleet",
    "expand": "kubelet_dra.workbench.fleet.nodenames",
}
"""Each name of the package → the module that defines it."""

__all__ = list(NAMES)


def __getattr__(name: str) -> Any:
    if name not in NAMES:
        raise AttributeError(f"module 'kubelet_dra.workbench.fleet' has no attribute {name!r}")
    return getattr(importlib.import_module(NAMES[name]), name)
