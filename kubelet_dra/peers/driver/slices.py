"""Publishing this node's devices as ResourceSlices, the way the Go helper's controller does.

The helper's ``resourceslice/resourceslicecontroller.go``; docs/protocol.md#helper-defaults.

One pool named after the node, split into slices of at most 128 devices; each slice has
``generateName`` ``<index as 5+ hex digits>-<driver>-<node>-``, a controller owner reference to
the Node and the pool generation. The publisher syncs at start, then watches this driver's
slices: any change (the kubelet wiping them, say) schedules a re-sync after ``--republish-delay``,
30 s by default like the helper.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from kubelet_dra.peers.driver.devices import Inventory
from kubelet_dra.peers.driver.knobs import Faults
from kubelet_dra.peers.driver.settings import DriverSettings
from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path
from kubelet_dra.peers.log import Logger

MAX_DEVICES_PER_SLICE = 128
"""The API's limit on devices in one ResourceSlice."""
RETRY_INITIAL = 1.0
"""Seconds before retrying a failed sync; doubles up to the republish delay."""

SLICES = api_path("resource.k8s.io", "v1", "resourceslices")
SLICE_KNOBS = frozenset({"slices-node", "no-republish"})


def slice_index(name: str) -> int | None:
    """The index a slice name starts with (``0000a-...`` → 10), or None if it has none."""
    prefix, sep, _ = name.partition("-")
    try:
        return int(prefix, 16) if sep and prefix else None
    except ValueError:
        return None


def _contains(actual: Any, desired: Any) -> bool:
    """Whether ``actual`` holds everything in ``desired`` (the server may add defaults)."""
    if isinstance(desired, dict):
        return isinstance(actual, dict) and all(_contains(actual.get(k), v) for k, v in desired.items())
    if isinstance(desired, list):
        return (
            isinstance(actual, list)
            and len(actual) == len(desired)
            and all(_contains(a, d) for a, d in zip(actual, desired, strict=True))
        )
    return actual == desired


class SlicePublisher:
    """Keeps the API server's ResourceSlices of this driver equal to the devices it has."""

    def __init__(
        self, kube: KubeClient, settings: DriverSettings, faults: Faults, inventory: Inventory, log: Logger
    ) -> None:
        self._kube = kube
        self._settings = settings
        self._faults = faults
        self._inventory = inventory
        self._log = log
        self._pools: set[str] = {settings.node_name}
        """Every pool this driver published in this run: slices of pools no longer wanted get deleted."""
        self._due: float | None = None
        self._wake = asyncio.Event()
        self.syncs = 0
        """Completed syncs, for status reports."""
        faults.subscribe(self._knobs_changed)

    @property
    def pool(self) -> str:
        return self._faults.get("slices-node") or self._settings.node_name

    def schedule(self, delay: float) -> None:
        """Sync after ``delay`` seconds, unless a sync is due sooner already."""
        due = asyncio.get_running_loop().time() + delay
        if self._due is None or due < self._due:
            self._due = due
            self._wake.set()

    async def run(self) -> None:
        """Sync now, then follow the watch; runs until cancelled."""
        self.schedule(0)
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(self._sync_loop())
            tasks.create_task(self._watch_loop())

    async def _sync_loop(self) -> None:
        retry = RETRY_INITIAL
        while True:
            await self._wait_due()
            if self.syncs and self._faults.get("no-republish"):
                continue
            try:
                await self.sync()
            except KubeApiError as err:
                self._log.error("publishing ResourceSlices failed, will retry", err, retryIn=retry)
                self.schedule(retry)
                retry = min(retry * 2, self._settings.republish_delay)
            else:
                retry = RETRY_INITIAL

    async def _wait_due(self) -> None:
        loop = asyncio.get_running_loop()
        while self._due is None or self._due > loop.time():
            self._wake.clear()
            timeout = None if self._due is None else self._due - loop.time()
            with contextlib.suppress(TimeoutError):  # not wait_for: Python 3.11's can swallow the publisher's cancel
                async with asyncio.timeout(timeout):
                    await self._wake.wait()
        self._due = None

    def _selector(self, pool: str) -> str:
        """The field selector of our slices of ``pool``: a node identity may list only its node's slices, so
        node-local slices are asked for by node name, as the kubeletplugin helper does."""
        driver = f"spec.driver={self._settings.driver_name}"
        return f"{driver},spec.nodeName={pool}" if self._settings.config.availability == "node-local" else driver

    async def _watch_loop(self) -> None:
        query = {"fieldSelector": self._selector(self._settings.node_name), "allowWatchBookmarks": "true"}
        first = True
        while True:
            if not first:
                self._changed("RELIST", {})  # events may have been missed between two watches
            first = False
            try:
                listed = await self._kube.request("GET", SLICES, query={"fieldSelector": query["fieldSelector"]})
                version = listed.get("metadata", {}).get("resourceVersion", "")
                async with contextlib.aclosing(
                    self._kube.watch(SLICES, {**query, "resourceVersion": version})
                ) as events:
                    async for event in events:
                        if event.type != "BOOKMARK" and self._ours(event.object):
                            self._changed(event.type, event.object)
            except KubeApiError as err:
                if not err.expired:
                    self._log.error("watching ResourceSlices failed, will retry", err)
                    await asyncio.sleep(RETRY_INITIAL)

    def _ours(self, obj: dict[str, Any]) -> bool:
        return obj.get("spec", {}).get("pool", {}).get("name") in self._pools

    def _changed(self, event: str, obj: dict[str, Any]) -> None:
        self._log.v(4).info("ResourceSlice changed", event=event, slice=obj.get("metadata", {}).get("name"))
        self.schedule(self._settings.republish_delay)

    def _knobs_changed(self, names: set[str]) -> None:
        if names & SLICE_KNOBS:
            self.schedule(0)

    async def sync(self) -> None:
        """One reconciliation: delete obsolete slices, update changed ones, create missing ones."""
        node = await self._node()
        self._inventory.update_node_labels(node.get("metadata", {}).get("labels") or {})
        pool = self.pool
        self._pools.add(pool)
        desired = self._desired_specs(pool)
        selectors = sorted({self._selector(name) for name in self._pools})
        listed = [await self._kube.request("GET", SLICES, query={"fieldSelector": text}) for text in selectors]
        existing = [s for answer in listed for s in answer.get("items") or [] if self._ours(s)]
        current = [s for s in existing if s["spec"]["pool"]["name"] == pool]
        generation = max((s["spec"]["pool"].get("generation", 0) for s in current), default=0)
        by_index: dict[int, dict[str, Any]] = {}
        obsolete = [s for s in existing if s["spec"]["pool"]["name"] != pool]
        for item in current:
            index = slice_index(item["metadata"]["name"])
            if (
                index is None
                or index >= len(desired)
                or index in by_index
                or item["spec"]["pool"].get("generation", 0) < generation
            ):
                obsolete.append(item)
            else:
                by_index[index] = item
        missing = [index for index in range(len(desired)) if index not in by_index]
        stale = [i for i, item in by_index.items() if not _contains(item["spec"], desired[i])]
        if missing or len(stale) > 1:
            generation, stale = generation + 1, list(by_index)
        generation = max(generation, 1)
        for item in obsolete:
            await self._delete(item)
        for index in stale:
            await self._write(by_index[index], desired[index], generation, len(desired))
        for index in missing:
            await self._create(index, pool, desired[index], generation, len(desired), node)
        if obsolete or stale or missing:
            self._log.info(
                "published ResourceSlices",
                pool=pool,
                generation=generation,
                created=len(missing),
                updated=len(stale),
                deleted=len(obsolete),
            )
        self.syncs += 1

    async def _node(self) -> dict[str, Any]:
        """Our Node object: its UID owns the slices, its labels decide whether devices exist."""
        name = self._settings.node_name
        try:
            return await self._kube.request("GET", api_path("", "v1", "nodes", name=name))
        except KubeApiError as err:
            if not err.not_found:
                raise
            raise KubeApiError(
                err.code,
                err.reason,
                f"Node {name} does not exist yet: a kubelet registers it (without one, create it with kubectl)",
                where=err.where,
            ) from err

    def _desired_specs(self, pool: str) -> list[dict[str, Any]]:
        """The spec of each slice of the pool, without ``pool`` (added when writing)."""
        devices = self._inventory.devices
        if not devices:
            return []
        config = self._settings.config
        placement: dict[str, Any] = {
            "node-local": {"nodeName": pool},
            "all-nodes": {"allNodes": True},
            "node-selector": {"nodeSelector": config.slice_node_selector},
        }[config.availability]
        shared = config.sharing == "shared"
        return [
            {
                "driver": self._settings.driver_name,
                **placement,
                "devices": [
                    device.to_slice(shared=shared) for device in devices[start : start + MAX_DEVICES_PER_SLICE]
                ],
            }
            for start in range(0, len(devices), MAX_DEVICES_PER_SLICE)
        ]

    def _with_pool(self, spec: dict[str, Any], pool: str, generation: int, count: int) -> dict[str, Any]:
        return {**spec, "pool": {"name": pool, "generation": generation, "resourceSliceCount": count}}

    async def _create(
        self, index: int, pool: str, spec: dict[str, Any], generation: int, count: int, node: dict[str, Any]
    ) -> None:
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {
                "generateName": f"{index:05x}-{self._settings.driver_name}-{pool}-",
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Node",
                        "name": node["metadata"]["name"],
                        "uid": node["metadata"]["uid"],
                        "controller": True,
                    }
                ],
            },
            "spec": self._with_pool(spec, pool, generation, count),
        }
        await self._kube.request("POST", SLICES, body=body)

    async def _write(self, item: dict[str, Any], spec: dict[str, Any], generation: int, count: int) -> None:
        pool = item["spec"]["pool"]["name"]
        body = {**item, "spec": self._with_pool(spec, pool, generation, count)}
        await self._kube.request(
            "PUT", api_path("resource.k8s.io", "v1", "resourceslices", name=item["metadata"]["name"]), body=body
        )

    async def _delete(self, item: dict[str, Any]) -> None:
        try:
            await self._kube.request(
                "DELETE", api_path("resource.k8s.io", "v1", "resourceslices", name=item["metadata"]["name"])
            )
        except KubeApiError as err:
            if not err.not_found:
                raise
