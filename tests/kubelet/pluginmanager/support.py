"""Test-side stand-ins: a clock the test advances, and a tiny DRA driver served in the test's own loop.

``TinyDriver`` is the *driver side* built directly from the generated stubs, so registration and
plugin-manager behaviour can be exercised with exact control over every answer the driver gives.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import attrs
import grpc

from kubelet_dra.peers.api import dra_health_v1alpha1_pb2 as health_pb2
from kubelet_dra.peers.api import pluginregistration_pb2 as registration_pb2
from kubelet_dra.peers.api.services import DRA_HEALTH_V1ALPHA1, DRA_V1, DRA_V1ALPHA4, DRA_V1BETA1, REGISTRATION, Service


def short_tempdir() -> Path:
    """A temp dir short enough for Unix socket paths (107 bytes)."""
    return Path(tempfile.mkdtemp(dir="/tmp", prefix="kd-"))


def remove_tree(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)


class FakeClock:
    """Wall time that moves only when the test calls ``advance``; sleepers wake in deadline order."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def time(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self.now + seconds, next(self._seq), future))
        await future

    def sleeping(self) -> list[float]:
        """Remaining time of every pending sleep, soonest first."""
        return sorted(deadline - self.now for deadline, _, future in self._sleepers if not future.done())

    async def advance(self, seconds: float) -> None:
        """Move time forward, waking sleepers in order; tasks about to sleep get to do so first."""
        await settle()
        target = self.now + seconds
        while self._sleepers and self._sleepers[0][0] <= target:
            deadline, _, future = heapq.heappop(self._sleepers)
            self.now = max(self.now, deadline)
            if not future.done():
                future.set_result(None)
                await settle()
        self.now = target
        await settle()


async def settle() -> None:
    """Let every ready task run until it blocks again."""
    for _ in range(10):
        await asyncio.sleep(0)


class Registration(REGISTRATION.servicer):  # type: ignore[misc,name-defined]
    def __init__(self, driver: TinyDriver) -> None:
        self.driver = driver

    async def GetInfo(self, request: registration_pb2.InfoRequest, context: grpc.aio.ServicerContext):
        driver = self.driver
        driver.get_info_calls += 1
        driver.changed()
        if driver.get_info_delay:
            await asyncio.sleep(driver.get_info_delay)
        if driver.get_info_error is not None:
            await context.abort(driver.get_info_error, "GetInfo failed on purpose")
        return registration_pb2.PluginInfo(
            type=driver.plugin_type,
            name=driver.name,
            endpoint=driver.endpoint if driver.endpoint is not None else str(driver.service_socket),
            supported_versions=[*driver.versions, *driver.health_advertised],
        )

    async def NotifyRegistrationStatus(self, request, context):
        self.driver.statuses.append((request.plugin_registered, request.error))
        self.driver.changed()
        if not request.plugin_registered:  # what the Go helper answers
            await context.abort(grpc.StatusCode.UNKNOWN, f"failed registration process: {request.error}")
        if self.driver.notify_error:
            await context.abort(grpc.StatusCode.UNKNOWN, self.driver.notify_error)
        return registration_pb2.RegistrationStatusResponse()


def dra_servicer(service: Service, driver: TinyDriver) -> object:
    """A servicer of one DRA API version that prepares one device per claim and records requests."""

    class Servicer(service.servicer):  # type: ignore[misc,name-defined]
        async def NodePrepareResources(self, request, context):
            driver.calls.append((service.advertised, "NodePrepareResources", request))
            driver.changed()
            await asyncio.sleep(driver.prepare_delay)
            response = service.message_class("NodePrepareResourcesResponse")()
            for claim in request.claims:
                device = response.claims[claim.uid].devices.add(pool_name="pool", device_name=f"dev-{claim.uid}")
                device.cdi_device_ids.append(f"{driver.name}/device=dev-{claim.uid}")
                if "share_id" in device.DESCRIPTOR.fields_by_name:
                    device.share_id = "share-1"
            return response

        async def NodeUnprepareResources(self, request, context):
            driver.calls.append((service.advertised, "NodeUnprepareResources", request))
            response = service.message_class("NodeUnprepareResourcesResponse")()
            for claim in request.claims:
                response.claims[claim.uid].error = ""
            return response

    return Servicer()


class Health(DRA_HEALTH_V1ALPHA1.servicer):  # type: ignore[misc,name-defined]
    """Streams whatever the test puts into ``driver.health_reports``; ``None`` ends the stream."""

    def __init__(self, driver: TinyDriver) -> None:
        self.driver = driver

    async def NodeWatchResources(self, request, context) -> AsyncIterator[health_pb2.NodeWatchResourcesResponse]:
        self.driver.health_streams += 1
        self.driver.changed()
        while (report := await self.driver.health_reports.get()) is not None:
            yield report


SERVICES = {"v1": DRA_V1, "v1beta1": DRA_V1BETA1, "v1alpha4": DRA_V1ALPHA4}


@attrs.define(eq=False)
class TinyDriver:
    """A registration socket in ``registry_dir`` and a service socket in ``plugin_dir``, in this process."""

    registry_dir: Path
    plugin_dir: Path
    name: str = "tiny.example.com"
    plugin_type: str = "DRAPlugin"
    versions: Sequence[str] = ("v1.DRAPlugin", "v1beta1.DRAPlugin")
    serves: Sequence[str] = ("v1", "v1beta1")
    health: bool = False
    """Serve v1alpha1.DRAResourceHealth (and advertise it, unless ``health_advertised`` says otherwise)."""
    health_advertised: Sequence[str] = attrs.field()
    endpoint: str | None = None
    socket_name: str = ""
    service_socket_name: str = "dra.sock"
    get_info_error: grpc.StatusCode | None = None
    get_info_delay: float = 0.0
    prepare_delay: float = 0.0
    notify_error: str = ""
    statuses: list[tuple[bool, str]] = attrs.field(factory=list)
    _changed: asyncio.Event = attrs.field(factory=asyncio.Event)
    calls: list[tuple[str, str, object]] = attrs.field(factory=list)
    get_info_calls: int = 0
    health_streams: int = 0
    health_reports: asyncio.Queue[health_pb2.NodeWatchResourcesResponse | None] = attrs.field(factory=asyncio.Queue)
    _servers: list[grpc.aio.Server] = attrs.field(factory=list)

    @health_advertised.default
    def _advertise_what_is_served(self) -> Sequence[str]:
        return (DRA_HEALTH_V1ALPHA1.advertised,) if self.health else ()

    @property
    def registration_socket(self) -> Path:
        return self.registry_dir / (self.socket_name or f"{self.name}-reg.sock")

    @property
    def service_socket(self) -> Path:
        return self.plugin_dir / self.service_socket_name

    async def start(self) -> TinyDriver:
        """Service socket first, registration socket second, like the Go helper."""
        await self.start_service()
        await self.start_registration()
        return self

    async def start_service(self) -> None:
        server = grpc.aio.server()
        for version in self.serves:
            SERVICES[version].add_to_server(dra_servicer(SERVICES[version], self), server)
        if self.health:
            DRA_HEALTH_V1ALPHA1.add_to_server(Health(self), server)
        await self._serve(server, self.service_socket)

    async def start_registration(self) -> None:
        server = grpc.aio.server()
        REGISTRATION.add_to_server(Registration(self), server)
        await self._serve(server, self.registration_socket)

    async def _serve(self, server: grpc.aio.Server, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists():
            path.unlink()
        server.add_insecure_port(f"unix:{path}")
        await server.start()
        self._servers.append(server)

    async def stop(self) -> None:
        """Stop serving; grpc removes both socket files, so the kubelet sees the removal."""
        await self.health_reports.put(None)
        for server in self._servers:
            await server.stop(None)
        self._servers.clear()
        for path in (self.registration_socket, self.service_socket):
            if os.path.lexists(path):
                path.unlink()

    def changed(self) -> None:
        """Something the driver saw happened: wake ``until``."""
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def until(self, predicate: Callable[[], object], timeout: float = 10.0) -> None:
        """Wait until ``predicate()`` holds; re-checked whenever the driver sees a call."""
        async with asyncio.timeout(timeout):
            while not predicate():
                await self._changed.wait()

    async def wait_for_status(self, count: int = 1) -> tuple[bool, str]:
        await self.until(lambda: len(self.statuses) >= count)
        return self.statuses[count - 1]
