"""One driver seen through the tap: its registration socket mirrored in the kubelet's registry dir.

The mirror forwards both registration calls to the driver's own registration socket. The first
``GetInfo`` names the driver and its service endpoint: the tap starts serving a socket of its own
that forwards to that endpoint and answers the kubelet with it in the endpoint's place, so every
DRA call passes through the tap too; that socket is exactly as reachable as the driver's endpoint
(``kubelet_dra.workbench.tap.reach``). An empty or relative endpoint is left as the driver gave it,
so the kubelet judges it exactly as it would without the tap. Stopping the mirror removes both of
its sockets: the kubelet then unregisters the driver as if the driver had gone.
"""

from __future__ import annotations

import asyncio
import os
import time

import attrs
from google.protobuf.message import DecodeError

from kubelet_dra.peers.api import pluginregistration_pb2 as registration_pb2
from kubelet_dra.peers.api.calls import CallRecorder
from kubelet_dra.peers.driver.files import leave_stale_socket
from kubelet_dra.peers.log import Logger
from kubelet_dra.workbench.tap.faults import WireFaults
from kubelet_dra.workbench.tap.forward import Forwarder, OpenCall, Upstream
from kubelet_dra.workbench.tap.owned import listening
from kubelet_dra.workbench.tap.reach import ServedEndpoint, Server
from kubelet_dra.workbench.tap.wirecalls import GET_INFO

LISTEN_WAIT = 0.5
LISTEN_POLL = 0.01


@attrs.frozen
class MirrorView:
    """What the live view and ``--output json`` say about one mirrored driver."""

    driver: str
    """The name from the driver's last GetInfo answer, "" until the kubelet asked."""
    driver_socket: str
    mirror_socket: str
    driver_endpoint: str
    tap_endpoint: str
    serving: bool
    """Whether the tap's service socket is served now: the driver's endpoint is there and the tap reaches it."""
    since: float
    """When this mirror of the driver's socket began (epoch seconds): the kubelet's calls from then on are about
    this incarnation of the driver; earlier ones reached a driver that has since gone."""

    def to_json(self) -> dict[str, str]:
        return attrs.asdict(self)


class DriverMirror:
    def __init__(
        self,
        driver_socket: str,
        mirror_socket: str,
        service_socket: str,
        recorder: CallRecorder,
        log: Logger,
        faults: WireFaults | None = None,
    ) -> None:
        """``service_socket``: the tap's socket that serves the driver's endpoint from the first GetInfo on, in a dir
        of its own per registration socket (two instances of one driver, a rolling update's, register from sockets
        of the same name in two dirs). ``faults``: the wire knobs carried out on the calls of both sockets."""
        self.driver_socket = driver_socket
        self.mirror_socket = mirror_socket
        self.service_socket = service_socket
        self._recorder = recorder
        self._log = log.with_values(socket=driver_socket)
        self._faults = faults
        self._registration = Forwarder(Upstream(driver_socket), recorder, log, rewrite=self._rewrite, faults=faults)
        self._server = Server(mirror_socket, self._registration, self._log)
        self._service: Forwarder | None = None
        self._service_server: ServedEndpoint | None = None
        self._since = 0.0

    def open_calls(self) -> list[OpenCall]:
        forwarders = [self._registration, *([self._service] if self._service else [])]
        return [call for forwarder in forwarders for call in forwarder.open_calls.values()]

    def view(self) -> MirrorView:
        service = self._service
        return MirrorView(
            driver=service.driver if service else "",
            driver_socket=self.driver_socket,
            mirror_socket=self.mirror_socket,
            driver_endpoint=service.upstream.path if service else "",
            tap_endpoint=self._service_server.path if self._service_server else "",
            serving=bool(self._service_server and self._service_server.serving),
            since=self._since,
        )

    async def start(self) -> None:
        """Mirror the driver's socket once it listens (``LISTEN_WAIT`` at most: a stale one is mirrored as it is).

        A gRPC server in Python binds its socket before it listens: a kubelet dials until the socket listens, but a
        call the tap forwards at once would find it refusing connections, a failure the kubelet never sees."""
        deadline = time.monotonic() + LISTEN_WAIT
        while not listening(self.driver_socket) and time.monotonic() < deadline:
            await asyncio.sleep(LISTEN_POLL)
        self._since = time.time()
        try:
            await self._server.start()
        except BaseException:
            await self._registration.upstream.close()
            raise
        self._log.v(2).info("Mirrored registration socket", mirror=self.mirror_socket)

    async def stop(self) -> None:
        """The service socket goes first: once the registration socket is gone, so is all of this mirror."""
        if self._service_server is not None and self._service is not None:
            await self._service_server.stop()
            await self._service.upstream.close()
        await self._server.stop()
        await self._registration.upstream.close()
        self._log.v(2).info("Removed mirrored sockets", mirror=self.mirror_socket)
        if self._faults is not None and self._faults.get("leave-sockets"):
            for path in (self.mirror_socket, self.service_socket):  # as the driver's own would be after a crash
                if not os.path.exists(path):
                    leave_stale_socket(path)
            self._log.info("Left the sockets behind (fault leave-sockets)", mirror=self.mirror_socket)

    async def _rewrite(self, method: str, data: bytes) -> bytes:
        """GetInfo's answer with the tap's endpoint (but the one ``getinfo-endpoint`` gives); every other answer as
        it is."""
        if method != GET_INFO or (self._faults is not None and self._faults.get("getinfo-endpoint")):
            return data
        try:
            info = registration_pb2.PluginInfo.FromString(data)
        except DecodeError:  # not a PluginInfo: the kubelet shall see the same bytes
            return data
        if not os.path.isabs(info.endpoint):
            return data
        info.endpoint = await self._serve(info.name, info.endpoint)
        return info.SerializeToString()

    async def _serve(self, driver: str, endpoint: str) -> str:
        """The tap's socket that forwards to ``endpoint``, started on the first GetInfo."""
        if self._service is None:
            self._service = Forwarder(Upstream(endpoint), self._recorder, self._log, driver=driver, faults=self._faults)
            log = self._log.with_values(driver=driver)
            self._service_server = ServedEndpoint(self.service_socket, self._service, log)
            await self._service_server.start()
        self._service.driver = driver
        await self._service.upstream.retarget(endpoint)
        assert self._service_server is not None
        return self._service_server.path
