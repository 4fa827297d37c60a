"""``ControlPlane``: both controllers driven by watches on the objects they read.

Level-triggered: any change to a pod, claim, slice or device class marks the cluster dirty, and
one reconcile pass reads everything (from the informer the watches keep) and brings it in line.
A failed pass (a 409 from a stale read, the server briefly gone) is retried after a short pause;
a watch that breaks is listed and opened again, so nothing is missed across reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType

from kubelet_dra.peers.controlplane.cluster import (
    CONCURRENT_WRITES,
    RESOURCE_GROUP,
    RESOURCE_VERSION,
    Snapshot,
    for_each,
)
from kubelet_dra.peers.controlplane.informer import Informer
from kubelet_dra.peers.controlplane.resourceclaim import ClaimController
from kubelet_dra.peers.controlplane.scheduling import Scheduler
from kubelet_dra.peers.kube.client import WATCH_TIMEOUT, KubeClient, api_path
from kubelet_dra.peers.log import get_logger

log = get_logger("controlplane")

WATCHED = {
    "Pod": api_path("", "v1", "pods"),
    "ResourceClaim": api_path(RESOURCE_GROUP, RESOURCE_VERSION, "resourceclaims"),
    "ResourceSlice": api_path(RESOURCE_GROUP, RESOURCE_VERSION, "resourceslices"),
    "DeviceClass": api_path(RESOURCE_GROUP, RESOURCE_VERSION, "deviceclasses"),
}
"""Each kind the controllers read → its collection, listed and watched."""
RETRY_DELAY = 0.2
"""Seconds before a failed pass or a broken watch is tried again."""


class ControlPlane:
    """Runs the claim controller and the allocator against ``kube`` while the context is open."""

    def __init__(
        self, kube: KubeClient, *, retry_delay: float = RETRY_DELAY, watch_timeout: int = WATCH_TIMEOUT
    ) -> None:
        self._kube = kube
        self._retry_delay = retry_delay
        self._watch_timeout = watch_timeout
        self.informer = Informer(tuple(WATCHED))
        self.claims = ClaimController(kube, self.informer)
        self.scheduler = Scheduler(kube, self.informer)
        self._listed: set[str] = set()
        """Kinds listed at least once: a pass waits for all, or it would take a cluster half seen for the whole."""
        self._dirty = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> ControlPlane:
        self._dirty.set()
        self._tasks = [
            asyncio.create_task(self._watch(kind, path), name=f"watch {path}") for kind, path in WATCHED.items()
        ]
        self._tasks.append(asyncio.create_task(self._reconcile_loop(), name="reconcile"))
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def snapshot(self) -> Snapshot:
        """The cluster as the informer has it now: listed, watched, and the controllers' own writes."""
        items = self.informer.items
        classes = {item["metadata"]["name"]: item for item in items("DeviceClass")}
        return Snapshot(tuple(items("Pod")), tuple(items("ResourceClaim")), tuple(items("ResourceSlice")), classes)

    async def reconcile(self) -> bool:
        """One pass over everything: claims for pods, then allocation and reservation, then clean-up.

        Each step reads the informer afresh, so it sees what the step before it wrote. Returns False
        when some object failed and the pass should be repeated.
        """
        if len(self._listed) < len(WATCHED):
            return True  # the last list to come marks the cluster dirty again
        state = self.snapshot()
        created = await for_each(
            state.pods, lambda pod: self.claims.sync_pod(pod, state), concurrency=CONCURRENT_WRITES
        )
        scheduled = await self.scheduler.sync(self.snapshot())
        state = self.snapshot()
        cleaned = await for_each(
            state.claims, lambda claim: self.claims.sync_claim(claim, state), concurrency=CONCURRENT_WRITES
        )
        return created and scheduled and cleaned

    async def _reconcile_loop(self) -> None:
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            try:
                complete = await self.reconcile()
            except Exception as err:  # the server away for a moment, or an object this code cannot read
                log.error("Reconcile pass failed", err)
                complete = False
            if not complete:
                await asyncio.sleep(self._retry_delay)
                self._dirty.set()

    async def _watch(self, kind: str, path: str) -> None:
        """Keep the informer's ``kind`` and mark dirty on every event; on any watch failure, list again (catching
        up) and re-open."""
        while True:
            try:
                listed = await self._kube.request("GET", path)
                self.informer.replace(kind, listed.get("items") or [])
                self._listed.add(kind)
                self._dirty.set()
                version = str((listed.get("metadata") or {}).get("resourceVersion") or "")
                async with contextlib.aclosing(
                    self._kube.watch(path, {"resourceVersion": version, "timeoutSeconds": str(self._watch_timeout)})
                ) as events:
                    async for event in events:
                        self.informer.event(kind, event.type, event.object)
                        self._dirty.set()
            except Exception as err:
                log.info("Watch broke, reconnecting", path=path, err=str(err))
                await asyncio.sleep(self._retry_delay)
