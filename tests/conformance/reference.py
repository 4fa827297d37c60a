"""The reference driver as the conformance tests run it: a short republish delay keeps the suite fast."""

from __future__ import annotations

import shlex

from kubelet_dra.testbed import REFERENCE_DRIVER

GPU = "gpu.example.com"
REFERENCE = REFERENCE_DRIVER.replace("{driver}", GPU) + " --devices 4 --republish-delay 1"
"""``--driver-cmd`` for the reference driver; append ``--fault-<knob> VALUE`` to break it."""


def with_fault(knob: str, value: str = "true") -> str:
    return f"{REFERENCE} --fault-{knob} {shlex.quote(value)}"
