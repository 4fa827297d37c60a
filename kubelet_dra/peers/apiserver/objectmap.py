"""The store's object map: every object by resource and key, and the indexes the semantics need.

Per resource a ``Table`` (its objects, a sorted view rebuilt lazily after writes for lists and
paging, and its watch channel); across resources the objects by uid, each owner's dependents
(garbage collection) and each namespace's object count (namespace deletion). Keys are
``<namespace>/<name>`` or ``<name>``, so key order is namespace, then name, as etcd's.
"""

from __future__ import annotations

import collections
from datetime import UTC, datetime
from typing import Any

import attrs

from kubelet_dra.peers.apiserver.paging import View
from kubelet_dra.peers.apiserver.resources import RESOURCES, ResourceType
from kubelet_dra.peers.apiserver.watch import Channel

NAMESPACES = "/namespaces"


def utcnow() -> datetime:
    return datetime.now(UTC)


def format_time(moment: datetime) -> str:
    """RFC 3339 at second precision in UTC ("2025-01-02T03:04:05Z"), as Kubernetes writes timestamps."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def resource_id(rt: ResourceType) -> str:
    return f"{rt.group}/{rt.plural}"


def namespace_type() -> ResourceType:
    return next(rt for rt in RESOURCES if resource_id(rt) == NAMESPACES)


def key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def scope(rt: ResourceType, namespace: str | None) -> str:
    return (namespace or "") if rt.namespaced else ""


def shallow_copy(obj: dict[str, Any]) -> dict[str, Any]:
    """A new top level and metadata over shared (never mutated) nested values."""
    return {**obj, "metadata": dict(obj["metadata"])}


def owner_uids(obj: dict[str, Any]) -> list[str]:
    return [ref["uid"] for ref in obj["metadata"].get("ownerReferences") or () if ref.get("uid")]


@attrs.define(eq=False)
class Table:
    """The objects of one resource, its sorted view (rebuilt lazily after writes) and its watch channel."""

    rt: ResourceType
    resource_id: str
    channel: Channel
    objects: dict[str, dict[str, Any]] = attrs.Factory(dict)
    changed_at: int = 0
    _sorted_keys: list[str] | None = None
    _view: View | None = None

    def view(self) -> View:
        if self._view is None:
            if self._sorted_keys is None:
                self._sorted_keys = sorted(self.objects)
            objects = self.objects
            self._view = View(self._sorted_keys, [objects[k] for k in self._sorted_keys])
        return self._view

    def put(self, key: str, obj: dict[str, Any] | None) -> None:
        if obj is None:
            del self.objects[key]
            self._sorted_keys = None
        else:
            if key not in self.objects:
                self._sorted_keys = None
            self.objects[key] = obj
        self._view = None


class ObjectMap:
    """Every resource's table, created on first use, and the cross-resource indexes kept with each write."""

    def __init__(self, history_size: int, start_rv: int) -> None:
        self._history_size = history_size
        self._start_rv = start_rv
        self.tables: dict[str, Table] = {}
        self.by_uid: dict[str, tuple[Table, str]] = {}
        self.dependents: dict[str, set[tuple[Table, str]]] = {}
        self.namespace_sizes: collections.Counter[str] = collections.Counter()

    def table(self, rt: ResourceType) -> Table:
        table_id = resource_id(rt)
        table = self.tables.get(table_id)
        if table is None:
            channel = Channel(self._history_size, self._start_rv)
            table = self.tables[table_id] = Table(rt, table_id, channel, changed_at=self._start_rv)
        return table

    def index(self, table: Table, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        """Put ``new`` (None: remove) under ``key``, replacing ``old``, and keep the indexes in step."""
        if old is not None:
            self.by_uid.pop(old["metadata"].get("uid", ""), None)
            for owner in owner_uids(old):
                dependents = self.dependents.get(owner)
                if dependents is not None:
                    dependents.discard((table, key))
                    if not dependents:
                        del self.dependents[owner]
        if new is not None:
            self.by_uid[new["metadata"]["uid"]] = (table, key)
            for owner in owner_uids(new):
                self.dependents.setdefault(owner, set()).add((table, key))
        if (old is None) != (new is None):
            namespace = ((new or old) or {})["metadata"].get("namespace")
            if namespace:
                self.namespace_sizes[namespace] += 1 if new is not None else -1
        table.put(key, new)
