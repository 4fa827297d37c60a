"""The stage the suites play on: a node, its API server and control plane, and driver processes.

The names load on first use: a command that needs only the driver placeholders or the object helpers does not
pay for the whole node, API server and control plane (about 2 s of a process's start on a busy machine).
"""

from __future__ import annotations

import importlib
from typing import Any

NAMES: dict[str, str] = {
    "PLACEHOLDERS": "kubelet_dra.workbench.testbed.drivers",
    "REFERENCE_DRIVER": "kubelet_dra.workbench.testbed.drivers",
    "DriverProcess": "kubelet_dra.workbench.testbed.drivers",
    "DriverSpec": "kubelet_dra.workbench.testbed.drivers",
    "command_words": "kubelet_dra.workbench.testbed.drivers",
    "placeholder_problem": "kubelet_dra.workbench.testbed.drivers",
    "placeholder_values": "kubelet_dra.workbench.testbed.drivers",
    "Testbed": "kubelet_dra.workbench.testbed.bed",
    "TestbedOptions": "kubelet_dra.workbench.testbed.bed",
}
"""Each name of the package → the module that defines it (the modules ``manifests`` and ``objects`` import as
themselves)."""

__all__ = [*NAMES, "manifests", "objects"]


def __getattr__(name: str) -> Any:
    if name not in NAMES:
        raise AttributeError(f"module 'kubelet_dra.workbench.testbed' has no attribute {name!r}")
    return getattr(importlib.import_module(NAMES[name]), name)
