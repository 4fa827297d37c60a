"""The object store behind the embedded API server, with kube-apiserver's semantics.

Objects are plain JSON dicts at the storage version. A write never changes a stored dict: it
stores a new one, so reads (get, list, watch) hand out the stored dicts themselves without
copying. Callers must treat every returned dict as read-only.

This module holds the verbs and the one global resourceVersion counter: every write goes
through ``_commit``, which assigns the resourceVersion, persists, indexes and fans the change out
to watchers. The rest lives beside it: the object map and its indexes (``objectmap``), what a
create or update keeps and checks (``writerules``), deletion with finalizers, graceful pods,
garbage collection and namespaces (``deletion``), list pages and watch starts (``reads``), and
typed decoding of patch results (``decoding``).

The store is used from the event loop's thread only, so it takes no locks.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from kubelet_dra.peers.apiserver import (
    conversion,
    decoding,
    defaults,
    deletion,
    documents,
    paging,
    patch_apply,
    reads,
    selectors,
    status,
    validation,
    writerules,
)
from kubelet_dra.peers.apiserver import patch as patches
from kubelet_dra.peers.apiserver.objectmap import (
    NAMESPACES,
    ObjectMap,
    Table,
    format_time,
    namespace_type,
    resource_id,
    scope,
    utcnow,
)
from kubelet_dra.peers.apiserver.objectmap import key as key_of
from kubelet_dra.peers.apiserver.paging import ListResult
from kubelet_dra.peers.apiserver.persistence import Persistence
from kubelet_dra.peers.apiserver.resources import RESOURCES, ResourceType
from kubelet_dra.peers.apiserver.status import ApiError
from kubelet_dra.peers.apiserver.watch import (
    ADDED,
    DELETED,
    MODIFIED,
    Change,
    Watch,
)


class Store:
    """All objects of the embedded API server; see the module docstring for the semantics."""

    def __init__(
        self,
        persistence: Persistence | None = None,
        *,
        history_size: int = 100_000,
        clock: Callable[[], datetime] = utcnow,
        rng: random.Random | None = None,
        watch_queue_size: int = 10_000,
    ) -> None:
        self._persistence = persistence
        self._clock = clock
        self._rng = rng or random.SystemRandom()
        self._watch_queue_size = watch_queue_size
        contents = persistence.load() if persistence else None
        if persistence and contents:
            decoding.check_stored(contents.objects, persistence.path)
        self._rv = contents.resource_version if contents else 0
        self._objects = ObjectMap(history_size, self._rv)
        self._deletions = deletion.Deletions(self._objects, self._commit, clock)
        self._snapshots = paging.Snapshots(clock)
        known = {resource_id(rt): rt for rt in RESOURCES}
        for stored in contents.objects if contents else ():
            if stored.resource in known:
                self._objects.index(self._objects.table(known[stored.resource]), stored.key, None, stored.object)

    @property
    def resource_version(self) -> int:
        return self._rv

    # -- reads ---------------------------------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        obj = self._objects.table(rt).objects.get(key_of(scope(rt, namespace), name))
        if obj is None:
            raise status.not_found(rt.plural, rt.group, name)
        return obj

    def list(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 0,
        continue_token: str = "",
    ) -> ListResult:
        """Objects in key order (namespace, then name).

        With ``limit``, a page and a continue token. Pages of one list come from the snapshot the
        first page was read from, so a paged list is consistent (as etcd's are); a snapshot lives
        ``SNAPSHOT_TTL`` (at most ``MAX_SNAPSHOTS`` of them), after which the token gets 410 Expired
        carrying a token that finishes the list from the current state.
        """
        selection = selectors.selection(rt, namespace, label_selector, field_selector)
        return reads.list_page(self._objects.table(rt), self._snapshots, selection, self._rv, limit, continue_token)

    def watch(
        self,
        rt: ResourceType,
        namespace: str | None = None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str = "",
        send_initial_events: bool | None = None,
        allow_bookmarks: bool = False,
    ) -> Watch:
        """A watch of ``rt``; raises 410 Expired when ``resource_version`` is older than the kept history.

        resourceVersion "" or "0" (without sendInitialEvents=false) starts with ADDED events for
        the current objects; ``send_initial_events=True`` does too and then sends a BOOKMARK
        annotated ``k8s.io/initial-events-end``; any other resourceVersion replays the changes
        after it.
        """
        selection = selectors.selection(rt, namespace, label_selector, field_selector)
        since = reads.parse_watch_version(resource_version, self._rv)
        return reads.open_watch(
            self._objects.table(rt),
            selection,
            since,
            send_initial_events=send_initial_events,
            allow_bookmarks=allow_bookmarks,
            current_resource_version=lambda: self._rv,
            queue_size=self._watch_queue_size,
        )

    # -- writes --------------------------------------------------------------------------------------------------

    def create(
        self, rt: ResourceType, namespace: str | None, obj: dict[str, Any], *, dry_run: bool = False
    ) -> dict[str, Any]:
        table = self._objects.table(rt)
        new = documents.clone(obj)
        metadata = writerules.metadata_of(new)
        namespace = writerules.namespace_of(rt, namespace, metadata)
        if metadata.get("resourceVersion"):
            message = "resourceVersion should not be set on objects to be created"
            details = {"causes": [{"message": message}]}
            raise ApiError(500, "InternalError", f"Internal error occurred: {message}", details)
        if namespace:
            namespaces = self._objects.table(namespace_type())
            writerules.check_namespace_open(
                namespaces, rt, namespace, metadata.get("name") or metadata.get("generateName") or ""
            )
        metadata.update(
            uid=str(uuid.UUID(int=self._rng.getrandbits(128), version=4)), creationTimestamp=format_time(self._clock())
        )
        if rt.generation:
            metadata["generation"] = 1
        else:
            metadata.pop("generation", None)
        metadata.pop("deletionTimestamp", None)
        metadata.pop("deletionGracePeriodSeconds", None)
        if rt.has_status and (rt.group, rt.kind) not in writerules.STATUS_ON_CREATE:
            new.pop("status", None)
        defaults.apply_defaults(rt, new)
        name = metadata.get("name") or ""
        if not name and metadata.get("generateName"):
            name = metadata["name"] = writerules.generate_name(self._rng, table, namespace, metadata["generateName"])
        validation.validate(rt, new, None)  # also rejects an object with neither name nor generateName
        key = key_of(namespace, name)
        if key in table.objects:
            raise status.already_exists(rt.plural, rt.group, name)
        if dry_run:
            return new
        return self._commit(table, key, None, new)

    def update(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        obj: dict[str, Any],
        *,
        subresource: str = "",
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Replace an object. A main update keeps the stored status, a status update changes only status.

        An update that leaves a deleted object without finalizers completes its deletion.
        """
        if subresource and (subresource != "status" or not rt.has_status):
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        table = self._objects.table(rt)
        namespace = scope(rt, namespace)
        key = key_of(namespace, name)
        old = table.objects.get(key)
        if old is None:
            raise status.not_found(rt.plural, rt.group, name)
        self._deletions.removed.clear()
        body = documents.clone(obj)
        metadata = writerules.metadata_of(body)
        if metadata.get("name", name) != name:
            raise status.bad_request(
                f"the name of the object ({metadata['name']}) does not match the name on the URL ({name})"
            )
        writerules.namespace_of(rt, namespace, metadata)
        writerules.check_update_preconditions(rt, old, metadata.get("uid"), metadata.get("resourceVersion"))
        new = writerules.status_update(old, body) if subresource else writerules.main_update(rt, old, body)
        defaults.apply_defaults(rt, new)
        if rt.generation:
            new["metadata"]["generation"] = old["metadata"].get("generation", 0) + (
                0 if writerules.same_spec(old, new) else 1
            )
        if writerules.unchanged(old, new):
            return old
        validation.validate(rt, new, old)
        writerules.check_new_finalizers(rt, old, new)
        if dry_run:
            return new
        return self._commit(table, key, old, new, remove=self._deletions.complete(rt, new))

    def patch(
        self,
        rt: ResourceType,
        version: str,
        namespace: str | None,
        name: str,
        patch_type: str,
        body: bytes,
        *,
        subresource: str = "",
        field_manager: str = "",
        force: bool = False,
        dry_run: bool = False,
        decode: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """Apply a patch expressed at ``version`` (the patch type is the request's Content-Type).

        The result is decoded into its kind (``decode``, by default with fieldValidation=Ignore)
        before it is stored. A ``metadata.resourceVersion`` inside the patch is a precondition, as
        with update.
        """
        if patch_type not in patches.accepted_types(rt.strategic_merge):
            raise patches.unsupported_media_type()
        if patch_type == patches.APPLY_PATCH:
            return self._apply(rt, version, namespace, name, body, subresource, field_manager, force, dry_run)
        current = conversion.from_storage(rt, version, self.get(rt, namespace, name))
        patched = patches.apply_patch(patch_type, current, body, strategic=rt.strategic_merge)
        stored = conversion.to_storage(rt, (decode or decoding.PatchDecoding(rt, version))(patched))
        return self.update(rt, namespace, name, stored, subresource=subresource, dry_run=dry_run)

    def delete(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        propagation_policy: str = "",
        preconditions: dict[str, str] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """Delete an object: removed at once, or marked with deletionTimestamp while finalizers or a
        graceful pod deletion keep it (a later delete with grace period 0 finishes a pod's)."""
        policy = deletion.propagation_policy(propagation_policy)
        table = self._objects.table(rt)
        if table.resource_id == NAMESPACES and name in deletion.IMMORTAL_NAMESPACES:
            raise status.forbidden(
                f'namespaces "{name}" is forbidden: this namespace may not be deleted', rt.plural, "", name
            )
        key = key_of(scope(rt, namespace), name)
        obj = table.objects.get(key)
        if obj is None:
            raise status.not_found(rt.plural, rt.group, name)
        conditions = preconditions or {}
        writerules.check_delete_preconditions(rt, obj, conditions.get("uid"), conditions.get("resourceVersion"))
        if dry_run:
            return obj
        self._deletions.removed.clear()
        return self._deletions.delete(table, key, obj, grace_period_seconds, policy)

    def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        *,
        label_selector: str = "",
        field_selector: str = "",
        grace_period_seconds: int | None = None,
        propagation_policy: str = "",
    ) -> list[dict[str, Any]]:
        """Delete every selected object; returns each as ``delete`` would."""
        policy = deletion.propagation_policy(propagation_policy)
        selected = self.list(rt, namespace, label_selector=label_selector, field_selector=field_selector).items
        table = self._objects.table(rt)
        deleted = []
        self._deletions.removed.clear()
        for obj in selected:
            key = key_of(obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
            current = table.objects.get(key)
            if current is not None:  # not already collected by an earlier deletion's cascade
                deleted.append(self._deletions.delete(table, key, current, grace_period_seconds, policy))
        return deleted

    # -- internals: writing --------------------------------------------------------------------------------------

    def _commit(
        self, table: Table, key: str, old: dict[str, Any] | None, new: dict[str, Any], *, remove: bool = False
    ) -> dict[str, Any]:
        """Write ``new`` (a dict the store owns from now on) or, with ``remove``, delete the object in state ``new``.

        The one place that assigns resourceVersions: persists, indexes, then tells the watchers.
        """
        rv = self._rv + 1
        new["metadata"]["resourceVersion"] = str(rv)
        if self._persistence is not None:
            self._persistence.write(table.resource_id, key, None if remove else new, rv)
        self._rv = rv
        self._objects.index(table, key, old, None if remove else new)
        table.changed_at = rv
        kind = DELETED if remove else ADDED if old is None else MODIFIED
        table.channel.publish(Change(rv, kind, new, old))
        if remove:
            self._deletions.removed[new["metadata"]["uid"]] = new
            self._deletions.after_removal(new)
        return new

    # -- internals: apply, lists, watches ------------------------------------------------------------------------

    def _apply(
        self,
        rt: ResourceType,
        version: str,
        namespace: str | None,
        name: str,
        body: bytes,
        subresource: str,
        field_manager: str,
        force: bool,
        dry_run: bool,
    ) -> dict[str, Any]:
        """Server-side apply: create the object when absent, otherwise merge the applied fields into it."""
        api_version = rt.api_version(version)
        applied = patch_apply.decode_applied(
            body, field_manager=field_manager, api_version=api_version, kind=rt.kind, name=name
        )
        applied = decoding.decode_applied(rt, version, name, applied)
        in_scope = scope(rt, namespace)
        stored = self._objects.table(rt).objects.get(key_of(in_scope, name))
        if stored is None and subresource:
            raise status.not_found(rt.plural, rt.group, name)
        if stored is None:
            live = {"apiVersion": api_version, "kind": rt.kind, "metadata": {"name": name}}
            if in_scope:
                live["metadata"]["namespace"] = in_scope
        else:
            live = conversion.from_storage(rt, version, stored)
        request = patch_apply.ApplyRequest(
            manager=field_manager,
            api_version=api_version,
            time=format_time(self._clock()),
            subresource=subresource,
            force=force,
            strategic=rt.strategic_merge,
        )
        result = conversion.to_storage(rt, patch_apply.server_side_apply(live, applied, request))
        if stored is None:
            return self.create(rt, namespace, result, dry_run=dry_run)
        return self.update(rt, namespace, name, result, subresource=subresource, dry_run=dry_run)
