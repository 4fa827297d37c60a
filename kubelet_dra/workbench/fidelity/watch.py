"""What the API server showed while a scenario replayed: every version of its pods, Events, slices and claims.

The trace's pod status, events and slices columns are built from these sightings, on either node
alike. Each kind is listed, then watched from the list's resourceVersion; when a watch breaks (a
scenario that restarts the API server) it is listed again, and what changed or went meanwhile is
recorded as if watched, so a replay's story is whole whatever the server did.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from types import TracebackType
from typing import Any

import attrs

from kubelet_dra.peers.kube.client import KubeClient, api_path, object_key
from kubelet_dra.peers.log import get_logger

WATCHED = {
    "pods": api_path("", "v1", "pods"),
    "events": api_path("", "v1", "events"),
    "slices": api_path("resource.k8s.io", "v1", "resourceslices"),
    "claims": api_path("resource.k8s.io", "v1", "resourceclaims"),
}
RETRY = 0.2
SETTLE = 1.0
"""Seconds the watches go on after the last step, so what the API server has already accepted is seen."""


@attrs.frozen
class Sighting:
    """One version of an object as the watch delivered it; ``object`` is ``None`` when it was deleted."""

    key: str
    object: dict[str, Any] | None


class ApiWatch:
    """``async with ApiWatch(kube) as watch:`` … ``watch.seen("pods")``: the sightings of each kind, in order."""

    def __init__(self, kube: KubeClient, *, settle: float = SETTLE) -> None:
        self._kube = kube
        self._settle = settle
        self._seen: dict[str, list[Sighting]] = {kind: [] for kind in WATCHED}
        self._versions: dict[str, dict[str, str]] = {kind: {} for kind in WATCHED}
        self._listed: dict[str, asyncio.Event] = {kind: asyncio.Event() for kind in WATCHED}
        self._tasks: list[asyncio.Task[None]] = []
        self._log = get_logger("fidelity")
        self.last_change = time.monotonic()
        """When the last sighting of any kind came (monotonic seconds): how long the API server has been quiet."""

    def seen(self, kind: str) -> list[Sighting]:
        return list(self._seen[kind])

    async def __aenter__(self) -> ApiWatch:
        self._tasks = [asyncio.create_task(self._follow(kind), name=f"trace {kind}") for kind in WATCHED]
        await asyncio.gather(*(listed.wait() for listed in self._listed.values()))
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None:
            await asyncio.sleep(self._settle)
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def _sighted(self, kind: str, obj: dict[str, Any], *, deleted: bool = False) -> None:
        key, versions = object_key(obj), self._versions[kind]
        if deleted:
            if versions.pop(key, None) is not None:
                self._seen[kind].append(Sighting(key, None))
                self.last_change = time.monotonic()
            return
        version = str((obj.get("metadata") or {}).get("resourceVersion", ""))
        if versions.get(key) != version:
            versions[key] = version
            self._seen[kind].append(Sighting(key, obj))
            self.last_change = time.monotonic()

    async def _follow(self, kind: str) -> None:
        path = WATCHED[kind]
        while True:
            try:
                listed = await self._kube.request("GET", path)
                items = {object_key(item): item for item in listed.get("items") or []}
                for gone in [key for key in self._versions[kind] if key not in items]:
                    namespace, _, name = gone.partition("/")
                    self._sighted(kind, {"metadata": {"namespace": namespace, "name": name}}, deleted=True)
                for item in items.values():
                    self._sighted(kind, item)
                self._listed[kind].set()
                query = {"resourceVersion": str(listed["metadata"].get("resourceVersion", ""))}
                async with contextlib.aclosing(self._kube.watch(path, query)) as events:
                    async for event in events:
                        if event.type != "BOOKMARK":
                            self._sighted(kind, event.object, deleted=event.type == "DELETED")
            except Exception as err:  # an API server restart: list again once it is back
                self._log.v(2).info("Watch broke; listing again", kind=kind, err=str(err))
                await asyncio.sleep(RETRY)
