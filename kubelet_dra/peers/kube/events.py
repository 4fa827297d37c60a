"""Warning Events about pods, as ``kubectl describe pod`` shows them, posted once per distinct message.

The kubelet and the control plane both report why a pod cannot go on; a retry loop must not
post the same Event again and again, so a reporter remembers the last message per pod.
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Mapping
from typing import Any

from kubelet_dra.peers.kube.client import KubeClient, api_path


def warning_event(pod: Mapping[str, Any], reason: str, message: str, source: Mapping[str, str]) -> dict[str, Any]:
    """A core/v1 Warning Event about ``pod``; ``source`` is e.g. ``{"component": "kubelet", "host": node}``."""
    meta = pod["metadata"]
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{uuid.uuid4().hex[:16]}", "namespace": meta["namespace"]},
        "involvedObject": {
            "apiVersion": "v1",
            "kind": "Pod",
            "namespace": meta["namespace"],
            "name": meta["name"],
            "uid": meta["uid"],
        },
        "reason": reason,
        "message": message,
        "type": "Warning",
        "source": dict(source),
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


class PodEventReporter:
    """Posts a Warning Event about a pod unless the last one posted for that pod said the same."""

    def __init__(self, kube: KubeClient, source: Mapping[str, str]) -> None:
        self._kube = kube
        self._source = dict(source)
        self._reported: dict[str, str] = {}

    async def report(self, pod: Mapping[str, Any], reason: str, message: str) -> bool:
        """Post the Event; False when this message was already the last one for the pod (nothing posted)."""
        meta = pod["metadata"]
        if self._reported.get(meta["uid"]) == message:
            return False
        body = warning_event(pod, reason, message, self._source)
        await self._kube.request("POST", api_path("", "v1", "events", namespace=meta["namespace"]), body=body)
        self._reported[meta["uid"]] = message
        return True

    def retain(self, uids: set[str]) -> None:
        """Forget every pod not in ``uids`` (pods that are gone)."""
        self._reported = {uid: message for uid, message in self._reported.items() if uid in uids}

    def forget(self, uid: str) -> None:
        """The pod is fine again (or gone): its next problem is reported even if the message repeats."""
        self._reported.pop(uid, None)
