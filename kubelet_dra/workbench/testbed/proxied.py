"""The seam for a driver run behind a proxy that carries out the fault knobs on its sockets' wire.

A driver that has no fault knobs of its own (a real third-party one) gets the reference driver's wire knobs from
a proxy between it and the node: the testbed gives the driver a registry dir of its own (its ``{registry_dir}``)
and asks the factory it was given for a proxy that mirrors that dir into the node's. The testbed knows the proxy
only by this protocol; the layer above supplies it (``kubelet_dra.workbench.tap.FaultProxy``), so the testbed
imports nothing above it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import attrs


@attrs.frozen
class ProxySite:
    """Where one proxied driver's proxy stands."""

    driver_registry_dir: Path
    """Where the driver registers (its ``{registry_dir}``)."""
    registry_dir: Path
    """Where the node looks for registrations: the proxy mirrors the driver's there."""
    socket_dir: Path
    """The proxy's own sockets (the endpoint it gives the node in the driver's place)."""
    stop_driver: Callable[[], None]
    """Stops the driver's process, from any thread (``exit-after-registration``)."""


class DriverProxy(Protocol):
    """A proxy between the node and one driver's sockets: started with the driver's first start, kept across its
    restarts and the node's, stopped when the testbed closes. Its knobs are the reference driver's wire knobs."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def reset_faults(self, knobs: Mapping[str, str]) -> dict[str, Any]:
        """Exactly ``knobs`` set, as at each start of a driver given them as flags; the knobs now."""
        ...

    async def set_faults(self, knobs: Mapping[str, str]) -> dict[str, Any]: ...

    async def clear_faults(self, *names: str) -> dict[str, Any]: ...

    async def status(self) -> dict[str, Any]:
        """``knobs`` and ``blocked`` (calls a knob holds now, by method), as the reference driver reports them."""
        ...

    def driver_sockets(self, driver_name: str) -> dict[str, Path]:
        """The driver's own registration socket (the usual name before the proxy found one) and, once the driver
        said it, its service socket."""
        ...


ProxyFactory = Callable[[ProxySite], DriverProxy]
