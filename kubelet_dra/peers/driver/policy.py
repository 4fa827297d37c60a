"""Which claims the reference driver accepts: the ``require-*`` knobs give it the policies real drivers have.

Some drivers prepare only claims of a certain shape: all their devices on the node (a TPU slice is
used whole), exactly N devices, or a claim carrying an opaque config of their own type. A scheduler
allocates such claims only when the user writes them that way, so the driver refuses any other
with a per-claim error in its own words. The reference driver plays each policy, so the
conformance suite's handling of them (``--claim``, one finding instead of one per check) is tested
without a Go driver.
"""

from __future__ import annotations

from collections.abc import Sequence

from kubelet_dra.peers.driver.claims import AllocatedDevice, ClaimRef, OpaqueConfig
from kubelet_dra.peers.driver.knobs import Faults


def refusal(
    faults: Faults,
    ref: ClaimRef,
    driver_name: str,
    allocated: Sequence[AllocatedDevice],
    configs: Sequence[OpaqueConfig],
    devices_on_node: int,
) -> str:
    """Why the driver's policy refuses the claim; empty when it accepts it."""
    count = len({(device.pool, device.device) for device in allocated})
    if faults.get("require-all-devices") and count != devices_on_node:
        return (
            f"invalid resource claim {ref}: it requests part of the {driver_name} devices ({count}), only requests"
            f" for all of its devices ({devices_on_node}) on the node are supported"
        )
    wanted = faults.get("require-count")
    if wanted and count != wanted:
        return f"invalid resource claim {ref}: {count} device(s) allocated, {driver_name} prepares exactly {wanted}"
    kind = faults.get("require-config")
    if kind and not any(isinstance(c.parameters, dict) and c.parameters.get("kind") == kind for c in configs):
        return (
            f"invalid resource claim {ref}: no opaque config of kind {kind!r} for driver {driver_name};"
            f" add one to spec.devices.config"
        )
    return ""
