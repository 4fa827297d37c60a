"""``FaultProxy``: one driver behind a tap of its own that carries out the wire knobs, for the testbed.

The testbed's ``DriverProxy`` (``kubelet_dra.workbench.testbed.proxied``): a ``TapThread`` mirroring the driver's
own registry dir into the node's, with ``WireFaults``. On a loop of its own, as the real kubelet's tap, so that
GetInfo's 1 s deadline does not depend on the replay's loop; knobs are read and changed on that loop only.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubelet_dra.peers.api.calls import CallRecorder
from kubelet_dra.workbench.tap.faults import WireFaults
from kubelet_dra.workbench.tap.tapthread import TapThread
from kubelet_dra.workbench.testbed.proxied import ProxySite


class FaultProxy:
    """``FaultProxy(site)``: what ``Testbed(proxies=FaultProxy)`` puts between a ``proxied`` driver and the node."""

    def __init__(self, site: ProxySite) -> None:
        self.site = site
        self.faults = WireFaults(stop_driver=site.stop_driver)
        self.recorder = CallRecorder()
        """Every call through the proxy, as the node saw it (the injected errors, the changed answers)."""
        self._thread: TapThread | None = None

    async def start(self) -> None:
        """Start mirroring (once: the proxy outlives the driver's restarts)."""
        if self._thread is None:
            thread = TapThread.mirroring(
                self.site.driver_registry_dir,
                self.site.registry_dir,
                socket_dir=self.site.socket_dir,
                recorder=self.recorder,
                faults=self.faults,
            )
            await thread.start()
            self._thread = thread

    async def stop(self) -> None:
        if self._thread is not None:
            thread, self._thread = self._thread, None
            await thread.stop()

    async def reset_faults(self, knobs: Mapping[str, str]) -> dict[str, Any]:
        return await self._on_tap(lambda: self.faults.reset(knobs))

    async def set_faults(self, knobs: Mapping[str, str]) -> dict[str, Any]:
        return await self._on_tap(lambda: self.faults.set(knobs))

    async def clear_faults(self, *names: str) -> dict[str, Any]:
        return await self._on_tap(lambda: self.faults.clear(names))

    async def status(self) -> dict[str, Any]:
        def read() -> dict[str, Any]:
            blocked = {method: count for method, count in self.faults.blocked.items() if count}
            return {"knobs": self.faults.active(), "blocked": blocked, "driverInfo": self.faults.driver_info}

        return await self._on_tap(read)

    def driver_sockets(self, driver_name: str) -> dict[str, Path]:
        found = {"registration": self.site.driver_registry_dir / f"{driver_name}-reg.sock"}
        for mirror in self._thread.mirrors() if self._thread else []:
            found["registration"] = Path(mirror.driver_socket)
            if mirror.driver_endpoint:
                found["service"] = Path(mirror.driver_endpoint)
        return found

    async def _on_tap(self, work: Any) -> Any:
        """``work()`` where the knobs live: on the tap's loop once it runs, here before."""
        return await self._thread.run(work) if self._thread else work()
