"""``ControlPlane``: both controllers driven by watches on the objects they read.

Level-triggered: any change to a pod, claim, slice or device class marks the cluster dirty, and
one reconcile pass lists everything and brings it in line. A failed pass (a 409 from a stale
read, the server briefly gone) is retried after a short pause; a watch that breaks is listed and
opened again, so nothing is missed across reconnects.
"""

from __future__ import annotations

import asyncio
import contextlib
from types import TracebackType

from kubelet_dra.peers.controlplane.cluster import (
    CONCURRENT_WRITES,
    RESOURCE_GROUP,
    RESOURCE_VERSION,
    for_each,
    snapshot,
)
from kubelet_dra.peers.controlplane.resourceclaim import ClaimController
from kubelet_dra.peers.controlplane.scheduling import Scheduler
from kubelet_dra.peers.kube.client import WATCH_TIMEOUT, KubeClient, api_path
from kubelet_dra.peers.log import get_logger

log = get_logger("controlplane")

WATCHED = (
    api_path("", "v1", "pods"),
    api_path(RESOURCE_GROUP, RESOURCE_VERSION, "resourceclaims"),
    api_path(RESOURCE_GROUP, RESOURCE_VERSION, "resourceslices"),
    api_path(RESOURCE_GROUP, RESOURCE_VERSION, "deviceclasses"),
)
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
        self.claims = ClaimController(kube)
        self.scheduler = Scheduler(kube)
        self._dirty = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    async def __aenter__(self) -> ControlPlane:
        self._dirty.set()
        self._tasks = [asyncio.create_task(self._watch(path), name=f"watch {path}") for path in WATCHED]
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

    async def reconcile(self) -> bool:
        """One pass over everything: claims for pods, then allocation and reservation, then clean-up.

        Each step lists afresh, so it sees what the step before it wrote. Returns False when some
        object failed and the pass should be repeated.
        """
        state = await snapshot(self._kube)
        created = await for_each(
            state.pods, lambda pod: self.claims.sync_pod(pod, state), concurrency=CONCURRENT_WRITES
        )
        scheduled = await self.scheduler.sync(await snapshot(self._kube))
        state = await snapshot(self._kube)
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

    async def _watch(self, path: str) -> None:
        """Mark dirty on every event; on any watch failure, list again (catching up) and re-open."""
        while True:
            try:
                listed = await self._kube.request("GET", path)
                self._dirty.set()
                version = str((listed.get("metadata") or {}).get("resourceVersion") or "")
                async with contextlib.aclosing(
                    self._kube.watch(path, {"resourceVersion": version, "timeoutSeconds": str(self._watch_timeout)})
                ) as events:
                    async for _ in events:
                        self._dirty.set()
            except Exception as err:
                log.info("Watch broke, reconnecting", path=path, err=str(err))
                await asyncio.sleep(self._retry_delay)
