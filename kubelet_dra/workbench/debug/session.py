"""``DebugSession``: watch a running node and keep its report current.

The node does the kubelet's work (watching, handshakes, connections, wipes); the session looks at
it after every change, and at least every ``refresh`` seconds for countdowns and new calls, adds
what changed to the timeline, and re-takes the socket inventory and the cluster's driver names
now and then (both cost I/O, so not at every change).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence

from kubelet_dra.kubelet.kubelet import Node
from kubelet_dra.peers.kube.client import KubeApiError
from kubelet_dra.workbench.debug.debugreport import Report
from kubelet_dra.workbench.debug.drivernames import NameMismatch, unregistered_names
from kubelet_dra.workbench.debug.inventory import FoundSocket, inventory
from kubelet_dra.workbench.debug.timeline import Event, Snapshot, Timeline, changes, snapshot
from kubelet_dra.workbench.testbed import objects

REFRESH = 0.5
SCAN_EVERY = 2.0
"""Seconds between two inventories of the socket dirs, and between two reads of the cluster's names."""


class DebugSession:
    def __init__(
        self,
        node: Node,
        *,
        api_server: str,
        elsewhere: Sequence[str] = (),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.node = node
        self._api_server = api_server
        self._elsewhere = tuple(elsewhere)
        self._clock = clock
        self.timeline = Timeline()
        self._last: Snapshot = snapshot(node, clock())
        self._found: tuple[FoundSocket, ...] = ()
        self._names: tuple[NameMismatch, ...] = ()
        self._scanned_at = float("-inf")
        self._node_missing = False
        self._api_error = ""
        self.timeline.add(changes(Snapshot(self._last.at, {}, {}, {}, (), ()), self._last))

    async def update(self, wait: float = REFRESH) -> list[Event]:
        """Wait up to ``wait`` seconds for the node to change, then take stock; the new timeline lines."""
        with contextlib.suppress(TimeoutError):
            await self.node.wait_for(lambda: snapshot(self.node, self._last.at) != self._last, timeout=wait)
        if self._clock() - self._scanned_at >= SCAN_EVERY:
            await self.scan()  # before the snapshot: a socket found is one the watcher had its chance to see
        current = snapshot(self.node, self._clock())
        fresh = self.timeline.add(changes(self._last, current))
        self._last = current
        return fresh

    async def scan(self) -> None:
        """Take the socket inventory and compare the cluster's driver names with the registered ones now."""
        self._scanned_at = self._clock()
        registry = self.node.registration.registry_dir
        self._found = tuple(await asyncio.to_thread(inventory, registry, self._elsewhere))
        if self.node.kube is None:
            return
        registered = {state.name for state in self.node.registrations() if state.name}
        try:
            self._names = tuple(await unregistered_names(self.node.kube, self.node.name, registered))
            self._node_missing = await objects.get(self.node.kube, "Node", self.node.name) is None
        except KubeApiError as err:  # shown as a problem; the registration side goes on without the API server
            self._api_error = str(err)
        else:
            self._api_error = ""

    def report(self) -> Report:
        last = self._last
        return Report(
            node=self.node.name,
            registry_dir=self.node.registration.registry_dir,
            api_server=self._api_server,
            wiping_delay=self.node.options.wiping_delay,
            dry_run_wipes=self.node.options.dry_run_wipes,
            at=last.at,
            sockets=tuple(last.sockets.values()),
            instances=tuple(last.instances.values()),
            wipes=last.wipes,
            found=self._found,
            names=self._names,
            node_missing=self._node_missing,
            api_error=self._api_error,
            events=tuple(self.timeline.events),
        )
