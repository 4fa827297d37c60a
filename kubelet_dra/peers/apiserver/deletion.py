"""Deletion with kube-apiserver's semantics: finalizers, graceful pod deletion, garbage collection, namespaces.

An object goes at once, or is marked with ``deletionTimestamp`` while finalizers or a pod's grace
period keep it. Owner references drive garbage collection as kube-controller-manager's collector
would: Background removes dependents after their owner, Foreground (``foregroundDeletion``
finalizer) before it, Orphan drops their references. Deleting a namespace deletes its contents and
finishes once it is empty. Every change goes through the store's commit, so it gets a
resourceVersion, is persisted and reaches watchers.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from kubelet_dra.peers.apiserver import status
from kubelet_dra.peers.apiserver.objectmap import (
    NAMESPACES,
    ObjectMap,
    Table,
    format_time,
    namespace_type,
    owner_uids,
    resource_id,
    shallow_copy,
)
from kubelet_dra.peers.apiserver.resources import ResourceType

DEFAULT_GRACE_PERIOD_SECONDS = 30
FOREGROUND_FINALIZER = "foregroundDeletion"
PROPAGATION_POLICIES = ("Foreground", "Background", "Orphan")
# Namespaces kube-apiserver refuses to delete (its NamespaceLifecycle admission).
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})

Commit = Callable[..., dict[str, Any]]
"""The store's commit: ``(table, key, old, new, *, remove=False) -> new``."""


class Deletions:
    """Deletes objects of ``objects`` through ``commit``; ``removed`` holds what the current write removed, by uid
    (a cascade may remove the very object being deleted)."""

    def __init__(self, objects: ObjectMap, commit: Commit, clock: Callable[[], datetime]) -> None:
        self._objects = objects
        self._commit = commit
        self._clock = clock
        self.removed: dict[str, dict[str, Any]] = {}

    def delete(
        self, table: Table, key: str, obj: dict[str, Any], grace_period_seconds: int | None, policy: str
    ) -> dict[str, Any]:
        rt = table.rt
        grace = grace_period(rt, obj, grace_period_seconds)
        metadata = obj["metadata"]
        if metadata.get("deletionTimestamp"):
            return self._shorten_grace(table, key, obj, grace)
        uid = metadata["uid"]
        if policy == "Orphan":
            for dependent_table, dependent_key in list(self._objects.dependents.get(uid, ())):
                self._drop_owner_references(dependent_table, dependent_key, {uid})
        foreground = policy == "Foreground" and bool(self._objects.dependents.get(uid))
        is_namespace = table.resource_id == NAMESPACES
        if not (grace or metadata.get("finalizers") or foreground or is_namespace):
            return self._commit(table, key, obj, shallow_copy(obj), remove=True)
        self._commit(table, key, obj, self._marked_for_deletion(rt, obj, grace, foreground))
        if foreground:
            for dependent_table, dependent_key in list(self._objects.dependents.get(uid, ())):
                dependent = dependent_table.objects.get(dependent_key)
                if dependent is not None and not dependent["metadata"].get("deletionTimestamp"):
                    self.delete(dependent_table, dependent_key, dependent, None, "Foreground")
            self._release_foreground(uid)
        if is_namespace:
            self._delete_namespace_contents(metadata["name"])
        self.finish(table, key)
        return table.objects.get(key) or self.removed[uid]

    def _marked_for_deletion(
        self, rt: ResourceType, obj: dict[str, Any], grace: int, foreground: bool
    ) -> dict[str, Any]:
        marked = shallow_copy(obj)
        metadata = marked["metadata"]
        metadata["deletionTimestamp"] = format_time(self._clock() + timedelta(seconds=grace))
        metadata["deletionGracePeriodSeconds"] = grace
        if metadata.get("generation"):
            metadata["generation"] += 1
        if foreground:
            metadata["finalizers"] = [*metadata.get("finalizers", []), FOREGROUND_FINALIZER]
        if resource_id(rt) == NAMESPACES:
            marked["status"] = {**(marked.get("status") or {}), "phase": "Terminating"}
        return marked

    def _shorten_grace(self, table: Table, key: str, obj: dict[str, Any], grace: int) -> dict[str, Any]:
        """A delete of an object already being deleted may only shorten its grace period (0 finishes it)."""
        if grace >= (obj["metadata"].get("deletionGracePeriodSeconds") or 0):
            return obj
        shortened = shallow_copy(obj)
        shortened["metadata"]["deletionTimestamp"] = format_time(self._clock() + timedelta(seconds=grace))
        shortened["metadata"]["deletionGracePeriodSeconds"] = grace
        return self._commit(table, key, obj, shortened, remove=self.complete(table.rt, shortened))

    def complete(self, rt: ResourceType, obj: dict[str, Any]) -> bool:
        """Whether a deleted object may go: no finalizers left, grace period over, and (namespaces) empty."""
        metadata = obj["metadata"]
        if not metadata.get("deletionTimestamp") or metadata.get("finalizers"):
            return False
        if metadata.get("deletionGracePeriodSeconds"):
            return False
        return resource_id(rt) != NAMESPACES or self._objects.namespace_sizes[metadata["name"]] == 0

    def finish(self, table: Table, key: str) -> None:
        obj = table.objects.get(key)
        if obj is not None and self.complete(table.rt, obj):
            self._commit(table, key, obj, shallow_copy(obj), remove=True)

    def after_removal(self, removed: dict[str, Any]) -> None:
        """Collect the removed object's dependents, release owners waiting for it, finish its namespace."""
        uid = removed["metadata"]["uid"]
        for dependent_table, dependent_key in list(self._objects.dependents.get(uid, ())):
            dependent = dependent_table.objects.get(dependent_key)
            if dependent is None:
                continue
            if any(owner in self._objects.by_uid for owner in owner_uids(dependent)):
                self._drop_owner_references(dependent_table, dependent_key, {uid})
            elif not dependent["metadata"].get("deletionTimestamp"):
                self.delete(dependent_table, dependent_key, dependent, None, "Background")
        for owner in owner_uids(removed):
            self._release_foreground(owner)
        namespace = removed["metadata"].get("namespace")
        if namespace and not self._objects.namespace_sizes[namespace]:
            self.finish(self._objects.table(namespace_type()), namespace)

    def _drop_owner_references(self, table: Table, key: str, owners: set[str]) -> None:
        obj = table.objects[key]
        changed = shallow_copy(obj)
        kept = [ref for ref in obj["metadata"].get("ownerReferences", []) if ref.get("uid") not in owners]
        if kept:
            changed["metadata"]["ownerReferences"] = kept
        else:
            changed["metadata"].pop("ownerReferences", None)
        self._commit(table, key, obj, changed)

    def _release_foreground(self, owner_uid: str) -> None:
        """Drop the foregroundDeletion finalizer of an owner whose dependents are all gone."""
        location = self._objects.by_uid.get(owner_uid)
        if location is None or self._objects.dependents.get(owner_uid):
            return
        table, key = location
        owner = table.objects[key]
        finalizers = owner["metadata"].get("finalizers", [])
        if FOREGROUND_FINALIZER not in finalizers:
            return
        released = shallow_copy(owner)
        kept = [f for f in finalizers if f != FOREGROUND_FINALIZER]
        if kept:
            released["metadata"]["finalizers"] = kept
        else:
            released["metadata"].pop("finalizers")
        self._commit(table, key, owner, released, remove=self.complete(table.rt, released))

    def _delete_namespace_contents(self, namespace: str) -> None:
        for table in list(self._objects.tables.values()):
            if not table.rt.namespaced:
                continue
            view = table.view()
            low, high = view.bounds(namespace)
            for key in view.keys[low:high]:
                obj = table.objects.get(key)
                if obj is not None and not obj["metadata"].get("deletionTimestamp"):
                    self.delete(table, key, obj, None, "Background")


def grace_period(rt: ResourceType, obj: dict[str, Any], requested: int | None) -> int:
    """Pods bound to a node die gracefully; everything else (and unbound or finished pods) at once."""
    if (rt.group, rt.kind) != ("", "Pod"):
        return 0
    spec = obj.get("spec") or {}
    if not spec.get("nodeName") or (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return 0
    if requested is None:
        requested = spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_PERIOD_SECONDS)
    return max(int(requested or 0), 0)


def propagation_policy(policy: str) -> str:
    if not policy:
        return "Background"
    if policy not in PROPAGATION_POLICIES:
        supported = ", ".join(f'"{p}"' for p in PROPAGATION_POLICIES)
        cause = {
            "reason": "FieldValueNotSupported",
            "message": f'Unsupported value: "{policy}": supported values: {supported}',
            "field": "propagationPolicy",
        }
        raise status.invalid("DeleteOptions", "meta.k8s.io", "", [cause])
    return policy
