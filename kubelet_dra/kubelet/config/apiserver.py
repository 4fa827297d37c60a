"""``PodSource``: the pods bound to one node, listed then watched, as the kubelet's API pod source.

Like the kubelet's pod config, it tells a change that needs a pod sync (spec, labels, annotations,
deletion, a terminal phase) from a status-only change, which does not: a pod's own status writes
must not cut its worker's wait short.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from typing import Any

from kubelet_dra.kubelet.status.generate import TERMINAL_PHASES
from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path
from kubelet_dra.peers.log import get_logger

RELIST_DELAY = 1.0


def finished(pod: Mapping[str, Any]) -> bool:
    """Whether the pod is done with its claims: being deleted or in a terminal phase."""
    return bool(pod["metadata"].get("deletionTimestamp")) or (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


def needs_sync(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """Whether ``new`` differs from ``old`` in what the kubelet syncs a pod for (its ``podsDifferSemantically``,
    plus a phase gone terminal), rather than in its status only."""
    old_meta, new_meta = old["metadata"], new["metadata"]
    fields = ("labels", "annotations", "deletionTimestamp", "deletionGracePeriodSeconds")
    return (
        old.get("spec") != new.get("spec")
        or any(old_meta.get(field) != new_meta.get(field) for field in fields)
        or finished(old) != finished(new)
    )


class PodSource:
    """Lists, then watches from the list's resourceVersion, relisting after any break; reports each pod seen
    (``seen(pod, changed)``) and each pod gone (``gone(uid)``)."""

    def __init__(
        self,
        kube: KubeClient,
        node_name: str,
        *,
        seen: Callable[[dict[str, Any], bool], None],
        gone: Callable[[str], None],
        synced: Callable[[], None],
    ) -> None:
        self._kube = kube
        self._node = node_name
        self._seen = seen
        self._gone = gone
        self._synced = synced
        self._log = get_logger("pod-source", node=node_name)
        self.pods: dict[str, dict[str, Any]] = {}
        """UID → the pod as last seen; removed when the API object is gone."""

    async def run(self) -> None:
        """List and watch until cancelled; ``synced`` is called once, after the first list."""
        path = api_path("", "v1", "pods")
        query = {"fieldSelector": f"spec.nodeName={self._node}"}
        first = True
        while True:
            try:
                listed = await self._kube.request("GET", path, query=query)
                self._relisted(listed.get("items") or [])
                if first:
                    first = False
                    self._synced()
                watch_query = {**query, "resourceVersion": listed["metadata"]["resourceVersion"]}
                async with contextlib.aclosing(self._kube.watch(path, watch_query)) as events:
                    async for event in events:
                        if event.type == "DELETED":
                            self._removed(event.object["metadata"]["uid"])
                        elif event.type in ("ADDED", "MODIFIED"):
                            self._updated(event.object)
            except KubeApiError as err:
                self._log.v(2).info("Pod watch ended, relisting", err=str(err))
            await asyncio.sleep(RELIST_DELAY)

    def _relisted(self, items: list[dict[str, Any]]) -> None:
        current = {pod["metadata"]["uid"] for pod in items}
        for uid in set(self.pods) - current:
            self._removed(uid)
        for pod in items:
            self._updated(pod)

    def _updated(self, pod: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        old = self.pods.get(uid)
        self.pods[uid] = pod
        self._seen(pod, old is None or needs_sync(old, pod))

    def _removed(self, uid: str) -> None:
        if self.pods.pop(uid, None) is not None:
            self._gone(uid)
