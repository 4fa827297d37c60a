"""The reference driver as the conformance tests run it: a short republish delay keeps the suite fast."""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import AsyncIterator, Awaitable, Callable

from kubelet_dra.workbench.conformance.target import Target
from kubelet_dra.workbench.testbed import REFERENCE_DRIVER, DriverSpec, Testbed, TestbedOptions

GPU = "gpu.example.com"
REFERENCE = REFERENCE_DRIVER.replace("{driver}", GPU) + " --devices 4 --republish-delay 1"
"""``--driver-cmd`` for the reference driver; append ``--fault-<knob> VALUE`` to break it."""
REGISTERS_WITHIN = 30.0
"""``registration_timeout`` when the driver registers or is refused at once: generous, since the wait ends as soon as
the node sees the socket, and only a machine too loaded to start a Python process in seconds pays for it."""
NO_SLICES_WITHIN = 6.0
"""``registration_timeout`` when the driver publishes no slices for the node: the suite waits that long for them."""


def with_fault(knob: str, value: str = "true") -> str:
    return f"{REFERENCE} --fault-{knob} {shlex.quote(value)}"


@contextlib.asynccontextmanager
async def already_running(
    cluster: Callable[[Testbed], Awaitable[object]] | None = None,
) -> AsyncIterator[Target]:
    """The reference driver started by somebody else, and the target that attaches the suite to it. Only the
    driver and its API server stay: a second kubelet or control plane would race the suite's for its pods.
    ``cluster`` adds what else the cluster holds (another node's objects, say) before the suite attaches."""
    async with Testbed(TestbedOptions(control_plane=False)) as outer:
        await outer.add_driver(DriverSpec(GPU, extra_args=("--devices", "4", "--republish-delay", "1")))
        await outer.stop_node()
        if cluster is not None:
            await cluster(outer)
        yield Target(
            registry_dir=str(outer.registry_dir), kubeconfig=str(outer.kubeconfig), cdi_root=str(outer.cdi_root)
        )
