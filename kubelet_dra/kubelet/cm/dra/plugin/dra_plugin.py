"""One registered instance of a DRA driver: its gRPC channel, connection state and background tasks.

The channel is created at registration and asked to connect at once, so an unreachable endpoint
shows up before any call (``DRAPluginManager.add`` in ``dra_plugin_manager.go``). Its connectivity is
followed: reaching READY makes the instance *connected*; leaving READY makes it disconnected and
immediately asks for a reconnect, which keeps the connection up for as long as the instance is registered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import attrs
import grpc

from kubelet_dra.kubelet.cm.dra.plugin.client import DRAClient
from kubelet_dra.peers.api.services import Service


@attrs.define(eq=False)
class PluginInstance:
    driver_name: str
    endpoint: str
    service: Service
    """The DRA service negotiated at registration, fixed for the instance's lifetime."""
    registered_at: float
    channel: grpc.aio.Channel = attrs.field(repr=False)
    client: DRAClient = attrs.field(repr=False)
    health_service: Service | None = None
    """The health service the kubelet streams from (1.37: negotiated, ``None`` when none was advertised)."""
    connected: bool = False
    connectivity: grpc.ChannelConnectivity = grpc.ChannelConnectivity.IDLE
    _tasks: list[asyncio.Task[None]] = attrs.field(factory=list, repr=False)

    @property
    def chosen_service(self) -> str:
        """The advertised identifier of the negotiated service, e.g. ``v1.DRAPlugin``."""
        return self.service.advertised

    @property
    def chosen_health_service(self) -> str:
        """The advertised identifier of the health service streamed from, "" when none."""
        return self.health_service.advertised if self.health_service else ""

    def start(self, on_connection_change: Callable[[PluginInstance], None]) -> None:
        self.connectivity = self.channel.get_state(try_to_connect=True)
        self.run(self._follow_connectivity(on_connection_change), "connectivity")

    def run(self, coroutine: Coroutine[Any, Any, None], what: str) -> None:
        """Run a background task that lives exactly as long as the instance."""
        self._tasks.append(asyncio.create_task(coroutine, name=f"{what} {self.driver_name} {self.endpoint}"))

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.wait(self._tasks)
        self._tasks.clear()
        await self.channel.close()

    async def _follow_connectivity(self, on_change: Callable[[PluginInstance], None]) -> None:
        state = self.connectivity
        while True:
            await self.channel.wait_for_state_change(state)
            state = self.channel.get_state(try_to_connect=False)
            self.connectivity = state
            connected = state is grpc.ChannelConnectivity.READY
            if connected != self.connected:
                self.connected = connected
                on_change(self)
            if state is grpc.ChannelConnectivity.IDLE:
                self.channel.get_state(try_to_connect=True)
