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
from kubelet_dra.workbench.tap.forward import UNLIMITED_MESSAGES, Forwarder

SOCKET_DIR_MODE = 0o750
FOLLOW_POLL = 0.1
"""How often the endpoint file is looked at while the connection's state does not change."""
FIRST_CONNECT = 0.3
"""How long the first GetInfo's answer waits at most for the tap to reach, or fail to reach, the driver's endpoint:
a driver registers once it serves, so a reachable one is connected within milliseconds and the kubelet's first
dial finds the socket; an unserved one fails as fast. Well within the kubelet's 1 s GetInfo deadline."""

READY = grpc.ChannelConnectivity.READY
DOWN = (grpc.ChannelConnectivity.TRANSIENT_FAILURE, grpc.ChannelConnectivity.SHUTDOWN)


class Server:
    """One gRPC server on one Unix socket, whose file goes away with it."""

    def __init__(self, path: str, handler: grpc.GenericRpcHandler) -> None:
        self.path = path
        self._server = grpc.aio.server(options=UNLIMITED_MESSAGES)
        self._server.add_generic_rpc_handlers((handler,))

    async def start(self) -> None:
        os.makedirs(os.path.dirname(self.path), SOCKET_DIR_MODE, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        self._server.add_insecure_port(f"unix:{self.path}")
        await self._server.start()

    async def stop(self) -> None:
        await self._server.stop(grace=None)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


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

    @property
    def serving(self) -> bool:
        """Whether a dial of :attr:`path` reaches the driver now."""
        return self._server is not None and os.path.exists(self.path)

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

    async def _follow(self) -> None:
        was_ready = False
        while True:
            upstream = self._forwarder.upstream
            state = upstream.channel.get_state(try_to_connect=True)
            present = os.path.exists(upstream.path)
            if state == READY and present and self._server is None:
                self._server = Server(self.path, self._forwarder)
                await self._server.start()
                self._known.set()
                self._log.v(2).info("Serving the driver's endpoint", endpoint=upstream.path, socket=self.path)
            elif self._server is not None and (state in DOWN or (was_ready and state != READY)):
                await self._close()  # the connection to the driver broke: the kubelet's to the tap breaks too
                self._log.v(2).info("Driver unreachable: tap socket closed", endpoint=upstream.path, state=state.name)
            elif self._server is not None and not present and os.path.exists(self.path):
                os.unlink(self.path)  # new dials fail as they would on the driver's; made connections stay
                self._log.v(2).info("Driver's socket removed: tap socket removed", endpoint=upstream.path)
            elif self._server is not None and present and not os.path.exists(self.path):
                await self._close()  # the driver's socket is back: serve a new one
                continue
            was_ready = state == READY
            if state in DOWN:
                self._known.set()
            # Not asyncio.wait_for: on Python 3.11 it swallows a cancel that comes as the state changes, and this
            # loop then outlives stop(), which waits for it for ever (the tap mirrors no driver after that).
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(FOLLOW_POLL):
                    await upstream.channel.wait_for_state_change(state)
