"""The tap's service socket for one driver, kept exactly as reachable as the driver's own endpoint.

A kubelet learns a driver's state from its connection (a wipe is armed when it fails, cancelled when
it is back), so the tap must not stand in for a driver it cannot reach. The socket the kubelet dials
exists only while the driver's endpoint file exists and the tap's connection to it is up: when the
driver's endpoint cannot be connected to (nothing serves it, the driver was killed) the tap's server
stops, closing the kubelet's connections to it, and its socket goes; a driver that removes its
service socket but keeps running keeps the connections made before, as the kubelet's would, while
new ones find no socket; once the driver can be reached again the tap serves a new socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import os

import grpc

from kubelet_dra.peers.log import Logger
from kubelet_dra.workbench.tap import owned
from kubelet_dra.workbench.tap.forward import UNLIMITED_MESSAGES, Forwarder
from kubelet_dra.workbench.tap.owned import OwnedSocket, SocketRefused

SOCKET_DIR_MODE = 0o750
FOLLOW_POLL = 0.1
"""How often the endpoint file is looked at while the connection's state does not change."""
STOP_GRACE = 1.0
"""How long a stopping tap lets the calls in flight through its sockets end (see ``Server.stop``)."""
FIRST_CONNECT = 0.3
"""How long the first GetInfo's answer waits at most for the tap to reach, or fail to reach, the driver's endpoint:
a driver registers once it serves, so a reachable one is connected within milliseconds and the kubelet's first
dial finds the socket; an unserved one fails as fast. Well within the kubelet's 1 s GetInfo deadline."""

READY = grpc.ChannelConnectivity.READY
DOWN = (grpc.ChannelConnectivity.TRANSIENT_FAILURE, grpc.ChannelConnectivity.SHUTDOWN)


class Server:
    """One gRPC server on a Unix socket of the tap's own, which goes away with it (``tap.owned``: never one something
    listens on, never one something else has since put at the path)."""

    def __init__(self, path: str, handler: grpc.GenericRpcHandler, log: Logger) -> None:
        self.path = path
        self._log = log
        self._server = grpc.aio.server(options=UNLIMITED_MESSAGES)
        self._server.add_generic_rpc_handlers((handler,))
        self._socket: OwnedSocket | None = None

    @property
    def in_place(self) -> bool:
        """Whether :attr:`path` is still this server's socket."""
        return self._socket is not None and self._socket.in_place

    async def start(self) -> None:
        os.makedirs(os.path.dirname(self.path), SOCKET_DIR_MODE, exist_ok=True)
        self._socket = await owned.bind(self._server, self.path, self._log)

    def remove_socket(self) -> None:
        """New dials fail; the connections made stay."""
        if self._socket is not None:
            self._socket.remove()

    async def stop(self) -> None:
        """The socket goes before the connections break: whoever sees its connection end finds no socket. A call in
        flight (the node's notification of a registration) gets ``STOP_GRACE`` to end as the driver answers it, so
        stopping the tap never turns it into a failure; a stream still open after that is cut."""
        self.remove_socket()
        await self._server.stop(grace=STOP_GRACE)


class ServedEndpoint:
    """``path``, served by ``forwarder`` while its upstream (the driver's endpoint) is reachable."""

    def __init__(self, path: str, forwarder: Forwarder, log: Logger) -> None:
        self.path = path
        self._forwarder = forwarder
        self._log = log
        self._server: Server | None = None
        self._task: asyncio.Task[None] | None = None
        self._known = asyncio.Event()
        """Set once the endpoint was first found reachable (and served) or unreachable."""
        self._refused = ""
        """Why the tap's socket could not be put at :attr:`path` last time it tried (said once)."""

    @property
    def serving(self) -> bool:
        """Whether a dial of :attr:`path` reaches the driver now."""
        return self._server is not None and self._server.in_place

    async def start(self) -> None:
        """Follow the driver's endpoint; return once it is served or found unreachable (``FIRST_CONNECT`` at most)."""
        self._task = asyncio.create_task(self._follow(), name=f"tap endpoint {self.path}")
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._known.wait(), FIRST_CONNECT)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait([self._task])
            self._task = None
        await self._close()

    async def _close(self) -> None:
        if self._server is not None:
            server, self._server = self._server, None
            await server.stop()

    async def _serve(self, endpoint: str) -> None:
        server = Server(self.path, self._forwarder, self._log)
        try:
            await server.start()
        except SocketRefused as err:  # not served: the kubelet finds the driver unreachable, as it is through the tap
            if str(err) != self._refused:
                self._log.error("Cannot serve the driver's endpoint", str(err), endpoint=endpoint)
            self._refused = str(err)
            self._known.set()
            return
        self._server, self._refused = server, ""
        self._known.set()
        self._log.v(2).info("Serving the driver's endpoint", endpoint=endpoint, socket=self.path)

    async def _follow(self) -> None:
        was_ready = False
        while True:
            upstream = self._forwarder.upstream
            state = upstream.channel.get_state(try_to_connect=True)
            present = os.path.exists(upstream.path)
            if state == READY and present and self._server is None:
                await self._serve(upstream.path)
            elif self._server is not None and (state in DOWN or (was_ready and state != READY)):
                await self._close()  # the connection to the driver broke: the kubelet's to the tap breaks too
                self._log.v(2).info("Driver unreachable: tap socket closed", endpoint=upstream.path, state=state.name)
            elif self._server is not None and not present and self._server.in_place:
                self._server.remove_socket()  # new dials fail as they would on the driver's; made connections stay
                self._log.v(2).info("Driver's socket removed: tap socket removed", endpoint=upstream.path)
            elif self._server is not None and present and not self._server.in_place:
                await self._close()  # the driver's socket is back (or the tap's was taken away): serve a new one
                continue
            was_ready = state == READY
            if state in DOWN:
                self._known.set()
            # Not asyncio.wait_for: on Python 3.11 it swallows a cancel that comes as the state changes, and this
            # loop then outlives stop(), which waits for it for ever (the tap mirrors no driver after that).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(FOLLOW_POLL):
                    await upstream.channel.wait_for_state_change(state)
