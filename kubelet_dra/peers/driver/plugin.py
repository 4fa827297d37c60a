"""One running driver instance: its sockets, servers, slice publisher and control channel.

Start order follows the Go helper (docs/protocol.md#driver-helper): the service socket serves before the
registration socket appears, so a kubelet that sees the registration can always connect.
Stopping removes both sockets (the kubelet deregisters on their removal) unless the
``leave-sockets`` knob simulates a crash.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import grpc

from kubelet_dra.peers.driver import control
from kubelet_dra.peers.driver.cdi import CDISpecs
from kubelet_dra.peers.driver.devices import Inventory, make_devices
from kubelet_dra.peers.driver.files import leave_stale_socket, remove
from kubelet_dra.peers.driver.health import HealthBoard
from kubelet_dra.peers.driver.knobs import Faults
from kubelet_dra.peers.driver.preparer import Preparer
from kubelet_dra.peers.driver.registration import Registration
from kubelet_dra.peers.driver.rpc import Routes
from kubelet_dra.peers.driver.servicesocket import DRAServices
from kubelet_dra.peers.driver.settings import DriverSettings
from kubelet_dra.peers.driver.slices import SlicePublisher
from kubelet_dra.peers.errors import ConfigError, UsageError
from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.peers.kube.resource import ResourceAPI
from kubelet_dra.peers.log import get_logger

STOP_GRACE = 1.0
"""Seconds in-flight calls get to finish when the driver stops."""


class DriverPlugin:
    """The reference DRA driver; ``async with DriverPlugin(settings) as driver:`` runs it in-process."""

    def __init__(
        self, settings: DriverSettings, *, faults: Faults | None = None, kube: KubeClient | None = None
    ) -> None:
        """``kube``: a client shared with other instances (one process serving many nodes); closed by its owner."""
        self.settings = settings
        self.faults = faults or Faults()
        self.log = get_logger("driver", driver=settings.driver_name, node=settings.node_name)
        self._stop_requested = asyncio.Event()
        self._servers: list[grpc.aio.Server] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._started = False
        self._owns_kube = kube is None
        self.kube = kube or KubeClient.from_kubeconfig(settings.kubeconfig)
        self.inventory = Inventory(
            make_devices(settings.driver_name, settings.node_name, settings.devices), settings.config.node_selector
        )
        self.health = HealthBoard(self.inventory, settings.node_name) if settings.health else None
        self.preparer = Preparer(
            settings,
            self.faults,
            self.inventory,
            CDISpecs(settings.cdi_root, settings.driver_name, settings.node_name),
            ResourceAPI(self.kube),
            self.log.with_values(component="prepare"),
        )
        self.registration = Registration(settings, self.faults, self.log, self.request_stop)
        self.services = DRAServices(self.preparer, self.health, settings.health_interval, self.faults, self.log)
        self.publisher = SlicePublisher(self.kube, settings, self.faults, self.inventory, self.log)
        self._control = control.ControlServer(settings.control_socket, self._control_operations(), self.log)

    async def __aenter__(self) -> DriverPlugin:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.stop()

    async def start(self) -> None:
        """Serve DRA, then registration, then control; publish slices. A failure undoes what was started."""
        settings = self.settings
        if not settings.registry_dir.is_dir():
            raise ConfigError(
                "the kubelet's plugin registry directory does not exist",
                where=str(settings.registry_dir),
                fix="start the kubelet (or kubelet-dra) first, or pass the --registry-dir it watches",
            )
        self._started = True
        try:
            settings.plugin_dir.mkdir(parents=True, exist_ok=True, mode=0o750)
            await self._serve(settings.service_socket, self.services.table)
            await self._serve(settings.registration_socket, lambda: self.registration.handlers)
            await self._control.start()
        except BaseException:
            await self.stop()
            raise
        self._tasks.append(asyncio.create_task(self.publisher.run(), name="slice publisher"))
        self.log.info(
            "driver started",
            registrationSocket=str(settings.registration_socket),
            serviceSocket=str(settings.service_socket),
            devices=settings.devices,
        )

    async def wait(self) -> None:
        """Return once something asked the driver to stop (a signal, or a fault knob)."""
        await self._stop_requested.wait()

    def request_stop(self) -> None:
        self._stop_requested.set()

    async def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self._control.close()
        for server in reversed(self._servers):
            await server.stop(STOP_GRACE)
        self._servers.clear()
        sockets = (self.settings.registration_socket, self.settings.service_socket)
        for path in sockets:
            remove(path)
        if self.faults.get("leave-sockets"):
            for path in sockets:
                leave_stale_socket(path)
        if self._owns_kube:
            await asyncio.to_thread(self.kube.close)
        self.log.info("driver stopped", socketsLeft=bool(self.faults.get("leave-sockets")))

    async def run(self) -> None:
        """Start, wait for a stop request, stop."""
        async with self:
            await self.wait()

    async def _serve(self, path: Path, table: Callable[[], dict[str, grpc.RpcMethodHandler]]) -> None:
        remove(path)
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((Routes(table),))
        try:
            server.add_insecure_port(f"unix://{path}")
        except RuntimeError as err:
            raise ConfigError(
                f"cannot listen on the socket: {err}", where=str(path), fix="check the directory"
            ) from err
        await server.start()
        self._servers.append(server)

    def _control_operations(self) -> dict[str, control.Operation]:
        def knobs(_: dict[str, Any] | None = None) -> dict[str, Any]:
            return {"knobs": self.faults.active()}

        def set_knobs(request: dict[str, Any]) -> dict[str, Any]:
            self.faults.set(dict(request.get("knobs") or {}))
            return knobs()

        def clear_knobs(request: dict[str, Any]) -> dict[str, Any]:
            self.faults.clear(request.get("knobs") or ())
            return knobs()

        def health(request: dict[str, Any]) -> dict[str, Any]:
            if self.health is None:
                raise UsageError("this driver reports no device health", fix="start it with --health")
            for device, state in dict(request.get("devices") or {}).items():
                self.health.set(device, state, str(request.get("message", "")))
            return {"health": self.health.states()}

        def status(_: dict[str, Any]) -> dict[str, Any]:
            registration = self.registration.status
            return {
                "status": {
                    "driver": self.settings.driver_name,
                    "node": self.settings.node_name,
                    "registration": None
                    if registration is None
                    else {
                        "registered": registration.registered,
                        "error": registration.error,
                        "notifications": registration.notifications,
                    },
                    "prepared": sorted(self.preparer.prepared),
                    "blocked": {method: count for method, count in self.preparer.blocked.items() if count},
                    "sliceSyncs": self.publisher.syncs,
                    "knobs": self.faults.active(),
                }
            }

        return {"get": knobs, "set": set_knobs, "clear": clear_knobs, "health": health, "status": status}
