"""The stage the suites play on: a node, its API server and control plane, and driver processes."""

from kubelet_dra.workbench.testbed import manifests, objects
from kubelet_dra.workbench.testbed.bed import Testbed, TestbedOptions
from kubelet_dra.workbench.testbed.drivers import (
    PLACEHOLDERS,
    REFERENCE_DRIVER,
    DriverProcess,
    DriverSpec,
    command_words,
    placeholder_values,
)

__all__ = [
    "PLACEHOLDERS",
    "REFERENCE_DRIVER",
    "DriverProcess",
    "DriverSpec",
    "Testbed",
    "TestbedOptions",
    "command_words",
    "manifests",
    "objects",
    "placeholder_values",
]
