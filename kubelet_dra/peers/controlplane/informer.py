"""The objects the control plane reads, kept in memory from one list and the watch events after it.

A pass used to list pods, claims, slices and device classes three times: at a thousand nodes that was megabytes
of JSON for the API server to encode, several times a second while pods came and went. Now each collection is
listed once per watch and kept up to date by its events, as a controller's informer does, and every object a
controller writes goes into the cache as the server answered it, before its watch event arrives (the scheduler's
assume cache): the next step and the next pass see the claim just created or the device just allocated, so no
claim is created twice and no device is given twice.
"""

from __future__ import annotations

from typing import Any

from kubelet_dra.peers.kube.client import KubeClient

Key = tuple[str, str]
KINDS = {
    "pods": "Pod",
    "resourceclaims": "ResourceClaim",
    "resourceslices": "ResourceSlice",
    "deviceclasses": "DeviceClass",
}
"""The collections the control plane watches: their plural (in a path) → their kind (in an object)."""


def object_key(obj: dict[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _version(obj: dict[str, Any]) -> int:
    text = str((obj.get("metadata") or {}).get("resourceVersion") or "")
    return int(text) if text.isdigit() else -1


class Informer:
    """Per kind (``Pod``, ``ResourceClaim``, …), the objects as last listed, watched or written. Readers change
    copies, never the objects themselves: they are the cache."""

    def __init__(self, kinds: tuple[str, ...]) -> None:
        self._objects: dict[str, dict[Key, dict[str, Any]]] = {kind: {} for kind in kinds}

    def replace(self, kind: str, items: list[dict[str, Any]]) -> None:
        """A fresh list: it replaces what was kept (an object deleted while the watch was down goes)."""
        self._objects[kind] = {object_key(item): item for item in items}

    def event(self, kind: str, event_type: str, obj: dict[str, Any]) -> None:
        if event_type == "DELETED":
            self._objects[kind].pop(object_key(obj), None)
        elif event_type in ("ADDED", "MODIFIED"):
            self.put(kind, obj)

    def put(self, kind: str, obj: dict[str, Any]) -> None:
        """Keep ``obj`` unless a newer version of it is kept already (a write's answer before an older event)."""
        kept = self._objects[kind].get(object_key(obj))
        if kept is None or _version(obj) < 0 or _version(obj) >= _version(kept):
            self._objects[kind][object_key(obj)] = obj

    def wrote(self, obj: dict[str, Any]) -> None:
        """The server's answer to a write: kept if it is an object of a kept kind."""
        if (kind := obj.get("kind")) in self._objects and "metadata" in obj:
            self.put(str(kind), obj)

    def deleted(self, path: str) -> None:
        """A DELETE of the object at ``path`` (``…/namespaces/NS/PLURAL/NAME``) succeeded: it is gone, or going and
        its watch event brings it back with its deletion timestamp."""
        parts = path.split("/")
        kind = KINDS.get(parts[-2]) if len(parts) > 2 else None
        if kind in self._objects:
            namespace = parts[parts.index("namespaces") + 1] if "namespaces" in parts else ""
            self._objects[kind].pop((namespace, parts[-1]), None)

    def items(self, kind: str) -> list[dict[str, Any]]:
        """The kind's objects in the order the API server lists them (by namespace, then name)."""
        objects = self._objects[kind]
        return [objects[key] for key in sorted(objects)]


class WriteThrough:
    """A ``KubeClient`` whose writes' answers go into the informer: what the controllers use."""

    def __init__(self, kube: KubeClient, informer: Informer) -> None:
        self._kube = kube
        self._informer = informer

    async def request(self, method: str, path: str, **options: Any) -> dict[str, Any]:
        """``KubeClient.request``, and the answer of a write kept."""
        answer = await self._kube.request(method, path, **options)
        if method == "DELETE":
            self._informer.deleted(path)
        elif method in ("POST", "PUT", "PATCH"):
            self._informer.wrote(answer)
        return answer
