"""kubelet-dra: the kubelet's side of Kubernetes Dynamic Resource Allocation, against real DRA drivers.

As a library, the names below come from this one import (``from kubelet_dra import Node, Tap``);
where each lives is docs/architecture.md's. They load on first use, so the CLI starts light.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

LIBRARY: dict[str, str] = {
    "Node": "kubelet_dra.kubelet.kubelet",
    "NodeOptions": "kubelet_dra.kubelet.kubelet",
    "DRAManager": "kubelet_dra.kubelet.cm.dra",
    "Checkpoint": "kubelet_dra.kubelet.cm.dra",
    "KubeClient": "kubelet_dra.peers.kube.client",
    "EmbeddedAPIServer": "kubelet_dra.peers.apiserver.server",
    "ServerThread": "kubelet_dra.workbench.testbed.serverthread",
    "Testbed": "kubelet_dra.workbench.testbed",
    "TestbedOptions": "kubelet_dra.workbench.testbed",
    "DriverSpec": "kubelet_dra.workbench.testbed",
    "Tap": "kubelet_dra.workbench.tap",
}
"""Each name of the library → the module that defines it."""

__all__ = ["__version__", *LIBRARY]


def __getattr__(name: str) -> Any:
    if name not in LIBRARY:
        raise AttributeError(f"module 'kubelet_dra' has no attribute {name!r}")
    return getattr(importlib.import_module(LIBRARY[name]), name)
