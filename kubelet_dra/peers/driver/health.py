"""Device health as this driver reports it on the ``v1alpha1.DRAResourceHealth`` stream.

The kubelet treats a device as Unknown once its last report is older than the timeout (30 s), so
the stream repeats the full device list every ``--health-interval`` seconds, and at once whenever
a device's health is changed through the control channel.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import attrs

from kubelet_dra.peers.api import dra_health_v1alpha1_pb2 as pb
from kubelet_dra.peers.driver.devices import Inventory
from kubelet_dra.peers.errors import UsageError

HEALTH_TIMEOUT_SECONDS = 30
STATES = {"Healthy": pb.HEALTHY, "Unhealthy": pb.UNHEALTHY, "Unknown": pb.UNKNOWN}


@attrs.frozen
class Health:
    state: str = "Healthy"
    message: str = ""


class HealthBoard:
    """The current health of every device; setting one wakes every open stream."""

    def __init__(self, inventory: Inventory, pool: str) -> None:
        self._inventory = inventory
        self._pool = pool
        self._health = {device.name: Health() for device in inventory.all}
        self._changed = asyncio.Event()

    def set(self, device: str, state: str, message: str = "") -> None:
        if device not in self._health:
            raise UsageError(f"unknown device {device!r}", fix=f"use one of {', '.join(self._health)}")
        if state not in STATES:
            raise UsageError(f"unknown health {state!r}", fix=f"use one of {', '.join(STATES)}")
        self._health[device] = Health(state, message)
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def states(self) -> dict[str, str]:
        return {name: health.state for name, health in self._health.items()}

    def report(self) -> pb.NodeWatchResourcesResponse:
        """The full list, as the kubelet expects every message to be, checked just now."""
        now = int(time.time())
        return pb.NodeWatchResourcesResponse(
            devices=[
                pb.DeviceHealth(
                    device=pb.DeviceIdentifier(pool_name=self._pool, device_name=name),
                    health=STATES[health.state],
                    last_updated_time=now,
                    health_check_timeout_seconds=HEALTH_TIMEOUT_SECONDS,
                    message=health.message,
                )
                for name, health in self._health.items()
            ]
        )

    async def stream(self, interval: float) -> AsyncIterator[pb.NodeWatchResourcesResponse]:
        """Reports forever: one now, then one per change or per ``interval``, whichever comes first."""
        while True:
            changed = self._changed
            yield self.report()
            with contextlib.suppress(TimeoutError):  # not wait_for: Python 3.11's can swallow the stream's cancel
                async with asyncio.timeout(interval):
                    await changed.wait()
