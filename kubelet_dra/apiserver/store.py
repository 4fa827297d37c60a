"""The object store behind the embedded API server, with kube-apiserver's semantics.

Objects are plain JSON dicts at the storage version. A write never changes a stored dict: it
stores a new one, so reads (get, list, watch) hand out the stored dicts themselves without
copying. Callers must treat every returned dict as read-only.

What clients rely on and this module provides: one global resourceVersion counter, uid,
creationTimestamp and generation; generateName; optimistic concurrency (409 Conflict);
status subresource rules; deletion with finalizers, graceful pod deletion and owner-reference
garbage collection (Background, Foreground, Orphan); namespace lifecycle; label and field
selectors; paged lists with continue tokens; watches with history replay; every patch type.

The store is used from the event loop's thread only, so it takes no locks.
"""

from __future__ import annotations

import bisect
import collections
import itertools
import random
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from kubelet_dra.apiserver import conversion, decoding, defaults, paging, selectors, status, validation
from kubelet_dra.apiserver import patch as patches
from kubelet_dra.apiserver.paging import ListResult, View
from kubelet_dra.apiserver.persistence import Persistence
from kubelet_dra.apiserver.resources import RESOURCES, ResourceType
from kubelet_dra.apiserver.status import ApiError
from kubelet_dra.apiserver.watch import (
    ADDED,
    BOOKMARK,
    DELETED,
    MODIFIED,
    Change,
    Channel,
    Watch,
    WatchEvent,
    bookmark_object,
    initial_events,
    translate,
)

GENERATE_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
GENERATE_NAME_LENGTH = 5
_GENERATE_NAME_ATTEMPTS = 8
DEFAULT_GRACE_PERIOD_SECONDS = 30
FOREGROUND_FINALIZER = "foregroundDeletion"
PROPAGATION_POLICIES = ("Foreground", "Background", "Orphan")
OPTIMISTIC_LOCK_MESSAGE = "the object has been modified; please apply your changes to the latest version and try again"
_NAMESPACES = "/namespaces"
# Namespaces kube-apiserver refuses to delete (its NamespaceLifecycle admission).
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})
# Fields of metadata only the server sets; an update keeps the stored values.
_SERVER_METADATA = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generateName",
    "generation",
)
# Kinds with a status subresource whose status a create may still set (kube's PrepareForCreate resets the others').
_STATUS_ON_CREATE = frozenset({("", "Node")})


def utcnow() -> datetime:
    return datetime.now(UTC)


def format_time(moment: datetime) -> str:
    """RFC 3339 at second precision in UTC ("2025-01-02T03:04:05Z"), as Kubernetes writes timestamps."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@attrs.define(eq=False)
class _Table:
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
        self._history_size = history_size
        self._clock = clock
        self._rng = rng or random.SystemRandom()
        self._watch_queue_size = watch_queue_size
        contents = persistence.load() if persistence else None
        if persistence and contents:
            decoding.check_stored(contents.objects, persistence.path)
        self._rv = contents.resource_version if contents else 0
        self._start_rv = self._rv
        self._tables: dict[str, _Table] = {}
        self._by_uid: dict[str, tuple[_Table, str]] = {}
        self._dependents: dict[str, set[tuple[_Table, str]]] = {}
        self._namespace_sizes: collections.Counter[str] = collections.Counter()
        # Objects removed by the current write, by uid: a cascade may remove the very object being deleted.
        self._removed: dict[str, dict[str, Any]] = {}
        self._snapshots = paging.Snapshots(clock)
        known = {_resource_id(rt): rt for rt in RESOURCES}
        for stored in contents.objects if contents else ():
            if stored.resource in known:
                self._index(self._table(known[stored.resource]), stored.key, None, stored.object)

    @property
    def resource_version(self) -> int:
        return self._rv

    # -- reads ---------------------------------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> dict[str, Any]:
        obj = self._table(rt).objects.get(_key(_scope(rt, namespace), name))
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
        table = self._table(rt)
        start = ""
        if continue_token:
            list_rv, start = paging.decode_continue(continue_token)
            view, list_rv = self._snapshots.continued(
                table.resource_id,
                list_rv,
                start,
                current=table.view(),
                current_rv=self._rv,
                changed_at=table.changed_at,
            )
        else:
            view, list_rv = table.view(), self._rv
        low, high = view.bounds(selection.namespace)
        if start:
            low = max(low, bisect.bisect_left(view.keys, start))
        items, next_index = paging.page(view, low, high, selection, limit)
        if next_index is None:
            return ListResult(items, str(list_rv))
        self._snapshots.remember(table.resource_id, list_rv, view)
        token = paging.encode_continue(list_rv, view.keys[next_index])
        remaining = None if selection.filters else high - next_index
        return ListResult(items, str(list_rv), token, remaining)

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
        table = self._table(rt)
        since = self._parse_watch_version(resource_version)
        events: Iterator[WatchEvent]
        if send_initial_events or (send_initial_events is None and not since):
            view = table.view()
            low, high = view.bounds(selection.namespace)
            events = initial_events(view.objects[low:high], selection)
            if send_initial_events:
                end = WatchEvent(BOOKMARK, bookmark_object(rt, self._rv, initial_events_end=True))
                events = itertools.chain(events, (end,))
        elif not since:
            events = iter(())
        else:
            replay = (translate(change, selection) for change in table.channel.since(since))
            events = iter([event for event in replay if event is not None])
        watcher = Watch(
            rt,
            selection,
            events,
            allow_bookmarks=allow_bookmarks,
            current_resource_version=lambda: self._rv,
            queue_size=self._watch_queue_size,
            on_close=table.channel.unsubscribe,
        )
        table.channel.subscribe(watcher)
        return watcher

    # -- writes --------------------------------------------------------------------------------------------------

    def create(
        self, rt: ResourceType, namespace: str | None, obj: dict[str, Any], *, dry_run: bool = False
    ) -> dict[str, Any]:
        table = self._table(rt)
        new = patches.clone(obj)
        metadata = _metadata_of(new)
        namespace = _namespace_of(rt, namespace, metadata)
        if metadata.get("resourceVersion"):
            message = "resourceVersion should not be set on objects to be created"
            details = {"causes": [{"message": message}]}
            raise ApiError(500, "InternalError", f"Internal error occurred: {message}", details)
        if namespace:
            self._check_namespace_open(rt, namespace, metadata.get("name") or metadata.get("generateName") or "")
        metadata.update(uid=self._new_uid(), creationTimestamp=format_time(self._clock()))
        if rt.generation:
            metadata["generation"] = 1
        else:
            metadata.pop("generation", None)
        metadata.pop("deletionTimestamp", None)
        metadata.pop("deletionGracePeriodSeconds", None)
        if rt.has_status and (rt.group, rt.kind) not in _STATUS_ON_CREATE:
            new.pop("status", None)
        defaults.apply_defaults(rt, new)
        name = metadata.get("name") or ""
        if not name and metadata.get("generateName"):
            name = metadata["name"] = self._generate_name(table, namespace, metadata["generateName"])
        validation.validate(rt, new, None)  # also rejects an object with neither name nor generateName
        key = _key(namespace, name)
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
        table = self._table(rt)
        namespace = _scope(rt, namespace)
        key = _key(namespace, name)
        old = table.objects.get(key)
        if old is None:
            raise status.not_found(rt.plural, rt.group, name)
        self._removed.clear()
        body = patches.clone(obj)
        metadata = _metadata_of(body)
        if metadata.get("name", name) != name:
            raise status.bad_request(
                f"the name of the object ({metadata['name']}) does not match the name on the URL ({name})"
            )
        _namespace_of(rt, namespace, metadata)
        _check_update_preconditions(rt, old, metadata.get("uid"), metadata.get("resourceVersion"))
        new = _status_update(old, body) if subresource else _main_update(rt, old, body)
        defaults.apply_defaults(rt, new)
        if rt.generation:
            new["metadata"]["generation"] = old["metadata"].get("generation", 0) + (0 if _same_spec(old, new) else 1)
        if _unchanged(old, new):
            return old
        validation.validate(rt, new, old)
        _check_new_finalizers(rt, old, new)
        if dry_run:
            return new
        return self._commit(table, key, old, new, remove=self._deletion_complete(rt, new))

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
        policy = _propagation_policy(propagation_policy)
        table = self._table(rt)
        if table.resource_id == _NAMESPACES and name in IMMORTAL_NAMESPACES:
            raise status.forbidden(
                f'namespaces "{name}" is forbidden: this namespace may not be deleted', rt.plural, "", name
            )
        key = _key(_scope(rt, namespace), name)
        obj = table.objects.get(key)
        if obj is None:
            raise status.not_found(rt.plural, rt.group, name)
        conditions = preconditions or {}
        _check_delete_preconditions(rt, obj, conditions.get("uid"), conditions.get("resourceVersion"))
        if dry_run:
            return obj
        self._removed.clear()
        return self._delete(table, key, obj, grace_period_seconds, policy)

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
        policy = _propagation_policy(propagation_policy)
        selected = self.list(rt, namespace, label_selector=label_selector, field_selector=field_selector).items
        table = self._table(rt)
        deleted = []
        self._removed.clear()
        for obj in selected:
            key = _key(obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
            current = table.objects.get(key)
            if current is not None:  # not already collected by an earlier deletion's cascade
                deleted.append(self._delete(table, key, current, grace_period_seconds, policy))
        return deleted

    # -- internals: writing --------------------------------------------------------------------------------------

    def _table(self, rt: ResourceType) -> _Table:
        resource_id = _resource_id(rt)
        table = self._tables.get(resource_id)
        if table is None:
            channel = Channel(self._history_size, self._start_rv)
            table = self._tables[resource_id] = _Table(rt, resource_id, channel, changed_at=self._start_rv)
        return table

    def _commit(
        self, table: _Table, key: str, old: dict[str, Any] | None, new: dict[str, Any], *, remove: bool = False
    ) -> dict[str, Any]:
        """Write ``new`` (a dict the store owns from now on) or, with ``remove``, delete the object in state ``new``.

        The one place that assigns resourceVersions: persists, indexes, then tells the watchers.
        """
        rv = self._rv + 1
        new["metadata"]["resourceVersion"] = str(rv)
        if self._persistence is not None:
            self._persistence.write(table.resource_id, key, None if remove else new, rv)
        self._rv = rv
        self._index(table, key, old, None if remove else new)
        table.changed_at = rv
        kind = DELETED if remove else ADDED if old is None else MODIFIED
        table.channel.publish(Change(rv, kind, new, old))
        if remove:
            self._removed[new["metadata"]["uid"]] = new
            self._after_removal(new)
        return new

    def _index(self, table: _Table, key: str, old: dict[str, Any] | None, new: dict[str, Any] | None) -> None:
        if old is not None:
            self._by_uid.pop(old["metadata"].get("uid", ""), None)
            for owner in _owner_uids(old):
                dependents = self._dependents.get(owner)
                if dependents is not None:
                    dependents.discard((table, key))
                    if not dependents:
                        del self._dependents[owner]
        if new is not None:
            self._by_uid[new["metadata"]["uid"]] = (table, key)
            for owner in _owner_uids(new):
                self._dependents.setdefault(owner, set()).add((table, key))
        if (old is None) != (new is None):
            namespace = ((new or old) or {})["metadata"].get("namespace")
            if namespace:
                self._namespace_sizes[namespace] += 1 if new is not None else -1
        table.put(key, new)

    def _delete(
        self, table: _Table, key: str, obj: dict[str, Any], grace_period_seconds: int | None, policy: str
    ) -> dict[str, Any]:
        rt = table.rt
        grace = _grace_period(rt, obj, grace_period_seconds)
        metadata = obj["metadata"]
        if metadata.get("deletionTimestamp"):
            return self._shorten_grace(table, key, obj, grace)
        uid = metadata["uid"]
        if policy == "Orphan":
            for dependent_table, dependent_key in list(self._dependents.get(uid, ())):
                self._drop_owner_references(dependent_table, dependent_key, {uid})
        foreground = policy == "Foreground" and bool(self._dependents.get(uid))
        is_namespace = table.resource_id == _NAMESPACES
        if not (grace or metadata.get("finalizers") or foreground or is_namespace):
            return self._commit(table, key, obj, _shallow_copy(obj), remove=True)
        self._commit(table, key, obj, self._marked_for_deletion(rt, obj, grace, foreground))
        if foreground:
            for dependent_table, dependent_key in list(self._dependents.get(uid, ())):
                dependent = dependent_table.objects.get(dependent_key)
                if dependent is not None and not dependent["metadata"].get("deletionTimestamp"):
                    self._delete(dependent_table, dependent_key, dependent, None, "Foreground")
            self._release_foreground(uid)
        if is_namespace:
            self._delete_namespace_contents(metadata["name"])
        self._finish_deletion(table, key)
        return table.objects.get(key) or self._removed[uid]

    def _marked_for_deletion(
        self, rt: ResourceType, obj: dict[str, Any], grace: int, foreground: bool
    ) -> dict[str, Any]:
        marked = _shallow_copy(obj)
        metadata = marked["metadata"]
        metadata["deletionTimestamp"] = format_time(self._clock() + timedelta(seconds=grace))
        metadata["deletionGracePeriodSeconds"] = grace
        if metadata.get("generation"):
            metadata["generation"] += 1
        if foreground:
            metadata["finalizers"] = [*metadata.get("finalizers", []), FOREGROUND_FINALIZER]
        if _resource_id(rt) == _NAMESPACES:
            marked["status"] = {**(marked.get("status") or {}), "phase": "Terminating"}
        return marked

    def _shorten_grace(self, table: _Table, key: str, obj: dict[str, Any], grace: int) -> dict[str, Any]:
        """A delete of an object already being deleted may only shorten its grace period (0 finishes it)."""
        if grace >= (obj["metadata"].get("deletionGracePeriodSeconds") or 0):
            return obj
        shortened = _shallow_copy(obj)
        shortened["metadata"]["deletionTimestamp"] = format_time(self._clock() + timedelta(seconds=grace))
        shortened["metadata"]["deletionGracePeriodSeconds"] = grace
        return self._commit(table, key, obj, shortened, remove=self._deletion_complete(table.rt, shortened))

    def _deletion_complete(self, rt: ResourceType, obj: dict[str, Any]) -> bool:
        """Whether a deleted object may go: no finalizers left, grace period over, and (namespaces) empty."""
        metadata = obj["metadata"]
        if not metadata.get("deletionTimestamp") or metadata.get("finalizers"):
            return False
        if metadata.get("deletionGracePeriodSeconds"):
            return False
        return _resource_id(rt) != _NAMESPACES or self._namespace_sizes[metadata["name"]] == 0

    def _finish_deletion(self, table: _Table, key: str) -> None:
        obj = table.objects.get(key)
        if obj is not None and self._deletion_complete(table.rt, obj):
            self._commit(table, key, obj, _shallow_copy(obj), remove=True)

    def _after_removal(self, removed: dict[str, Any]) -> None:
        """Collect the removed object's dependents, release owners waiting for it, finish its namespace."""
        uid = removed["metadata"]["uid"]
        for dependent_table, dependent_key in list(self._dependents.get(uid, ())):
            dependent = dependent_table.objects.get(dependent_key)
            if dependent is None:
                continue
            if any(owner in self._by_uid for owner in _owner_uids(dependent)):
                self._drop_owner_references(dependent_table, dependent_key, {uid})
            elif not dependent["metadata"].get("deletionTimestamp"):
                self._delete(dependent_table, dependent_key, dependent, None, "Background")
        for owner in _owner_uids(removed):
            self._release_foreground(owner)
        namespace = removed["metadata"].get("namespace")
        if namespace and not self._namespace_sizes[namespace]:
            self._finish_deletion(self._table(_namespace_type()), namespace)

    def _drop_owner_references(self, table: _Table, key: str, owners: set[str]) -> None:
        obj = table.objects[key]
        changed = _shallow_copy(obj)
        kept = [ref for ref in obj["metadata"].get("ownerReferences", []) if ref.get("uid") not in owners]
        if kept:
            changed["metadata"]["ownerReferences"] = kept
        else:
            changed["metadata"].pop("ownerReferences", None)
        self._commit(table, key, obj, changed)

    def _release_foreground(self, owner_uid: str) -> None:
        """Drop the foregroundDeletion finalizer of an owner whose dependents are all gone."""
        location = self._by_uid.get(owner_uid)
        if location is None or self._dependents.get(owner_uid):
            return
        table, key = location
        owner = table.objects[key]
        finalizers = owner["metadata"].get("finalizers", [])
        if FOREGROUND_FINALIZER not in finalizers:
            return
        released = _shallow_copy(owner)
        kept = [f for f in finalizers if f != FOREGROUND_FINALIZER]
        if kept:
            released["metadata"]["finalizers"] = kept
        else:
            released["metadata"].pop("finalizers")
        self._commit(table, key, owner, released, remove=self._deletion_complete(table.rt, released))

    def _delete_namespace_contents(self, namespace: str) -> None:
        for table in list(self._tables.values()):
            if not table.rt.namespaced:
                continue
            view = table.view()
            low, high = view.bounds(namespace)
            for key in view.keys[low:high]:
                obj = table.objects.get(key)
                if obj is not None and not obj["metadata"].get("deletionTimestamp"):
                    self._delete(table, key, obj, None, "Background")

    def _check_namespace_open(self, rt: ResourceType, namespace: str, name: str) -> None:
        """Namespaced objects need an existing namespace that is not terminating (404 / 403 otherwise)."""
        found = self._table(_namespace_type()).objects.get(namespace)
        if found is None:
            raise status.not_found("namespaces", "", namespace)
        if found["metadata"].get("deletionTimestamp"):
            qualified = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
            message = (
                f'{qualified} "{name}" is forbidden: unable to create new content in namespace {namespace} '
                "because it is being terminated"
            )
            raise status.forbidden(message, rt.plural, rt.group, name)

    def _new_uid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def _generate_name(self, table: _Table, namespace: str, prefix: str) -> str:
        """``prefix`` + 5 random characters from kube's alphabet, retried on collision like kube-apiserver."""
        name = prefix
        for _ in range(_GENERATE_NAME_ATTEMPTS):
            name = prefix + "".join(self._rng.choice(GENERATE_NAME_ALPHABET) for _ in range(GENERATE_NAME_LENGTH))
            if _key(namespace, name) not in table.objects:
                return name
        raise status.already_exists(table.rt.plural, table.rt.group, name)

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
        applied = patches.decode_applied(
            body, field_manager=field_manager, api_version=api_version, kind=rt.kind, name=name
        )
        applied = decoding.decode_applied(rt, version, name, applied)
        scope = _scope(rt, namespace)
        stored = self._table(rt).objects.get(_key(scope, name))
        if stored is None and subresource:
            raise status.not_found(rt.plural, rt.group, name)
        if stored is None:
            live = {"apiVersion": api_version, "kind": rt.kind, "metadata": {"name": name}}
            if scope:
                live["metadata"]["namespace"] = scope
        else:
            live = conversion.from_storage(rt, version, stored)
        request = patches.ApplyRequest(
            manager=field_manager,
            api_version=api_version,
            time=format_time(self._clock()),
            subresource=subresource,
            force=force,
            strategic=rt.strategic_merge,
        )
        result = conversion.to_storage(rt, patches.server_side_apply(live, applied, request))
        if stored is None:
            return self.create(rt, namespace, result, dry_run=dry_run)
        return self.update(rt, namespace, name, result, subresource=subresource, dry_run=dry_run)

    def _parse_watch_version(self, text: str) -> int:
        """The resourceVersion a watch starts after (0 = none given); 504 for one this server never reached."""
        if not text:
            return 0
        try:
            value = int(text)
        except ValueError:
            value = -1
        if value < 0:
            raise status.bad_request(f'invalid resource version: "{text}"')
        if value > self._rv:
            details = {
                "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
                "retryAfterSeconds": 1,
            }
            message = f"Timeout: Too large resource version: {value}, current: {self._rv}"
            raise ApiError(504, "Timeout", message, details)
        return value


# -- helpers -------------------------------------------------------------------------------------------------------


def _resource_id(rt: ResourceType) -> str:
    return f"{rt.group}/{rt.plural}"


def _namespace_type() -> ResourceType:
    return next(rt for rt in RESOURCES if _resource_id(rt) == _NAMESPACES)


def _key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}" if namespace else name


def _scope(rt: ResourceType, namespace: str | None) -> str:
    return (namespace or "") if rt.namespaced else ""


def _shallow_copy(obj: dict[str, Any]) -> dict[str, Any]:
    """A new top level and metadata over shared (never mutated) nested values."""
    return {**obj, "metadata": dict(obj["metadata"])}


def _owner_uids(obj: dict[str, Any]) -> list[str]:
    return [ref["uid"] for ref in obj["metadata"].get("ownerReferences") or () if ref.get("uid")]


def _metadata_of(obj: dict[str, Any]) -> dict[str, Any]:
    metadata = obj.get("metadata")
    if metadata is None:
        metadata = obj["metadata"] = {}
    if not isinstance(metadata, dict):
        raise status.bad_request("metadata must be an object")
    return metadata


def _namespace_of(rt: ResourceType, namespace: str | None, metadata: dict[str, Any]) -> str:
    """The request's namespace, checked against and written into the object's metadata."""
    if not rt.namespaced:
        metadata.pop("namespace", None)
        return ""
    in_body = metadata.get("namespace") or ""
    namespace = namespace or in_body
    if not namespace:
        raise status.bad_request("the namespace of the object is required")
    if in_body and in_body != namespace:
        raise status.bad_request(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    metadata["namespace"] = namespace
    return namespace


def _check_update_preconditions(rt: ResourceType, old: dict[str, Any], uid: str | None, rv: str | None) -> None:
    """An update's ``metadata.uid`` and ``resourceVersion`` must be the stored ones, worded as kube-apiserver's
    storage layer words them."""
    metadata = old["metadata"]
    if uid and uid != metadata.get("uid"):
        key = rt.storage_key(metadata.get("namespace", ""), metadata["name"])
        why = (
            f"StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg:"
            f" Precondition failed: UID in precondition: {uid}, UID in object meta: {metadata.get('uid')}"
        )
        raise status.conflict(rt.plural, rt.group, metadata["name"], why)
    if rv and rv != metadata.get("resourceVersion"):
        raise status.conflict(rt.plural, rt.group, metadata["name"], OPTIMISTIC_LOCK_MESSAGE)


def _check_delete_preconditions(rt: ResourceType, obj: dict[str, Any], uid: str | None, rv: str | None) -> None:
    """DeleteOptions' preconditions; kube-apiserver names the kind, not the resource, in these conflicts."""
    metadata = obj["metadata"]
    if uid and uid != metadata.get("uid"):
        why = (
            f"the UID in the precondition ({uid}) does not match the UID in record ({metadata.get('uid')})."
            " The object might have been deleted and then recreated"
        )
        raise status.conflict(rt.kind, rt.group, metadata["name"], why)
    if rv and rv != metadata.get("resourceVersion"):
        why = (
            f"the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record"
            f" ({metadata.get('resourceVersion')}). The object might have been modified"
        )
        raise status.conflict(rt.kind, rt.group, metadata["name"], why)


def _main_update(rt: ResourceType, old: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The client's object with the server-owned metadata (and, for status kinds, the status) kept."""
    metadata, old_metadata = body["metadata"], old["metadata"]
    for field in _SERVER_METADATA:
        if field in old_metadata:
            metadata[field] = old_metadata[field]
        else:
            metadata.pop(field, None)
    if "managedFields" not in metadata and "managedFields" in old_metadata:
        metadata["managedFields"] = old_metadata["managedFields"]
    if rt.has_status:
        if "status" in old:
            body["status"] = old["status"]
        else:
            body.pop("status", None)
    return body


def _status_update(old: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The stored object with the client's status (and managedFields, which record who set it)."""
    new = _shallow_copy(old)
    if "status" in body:
        new["status"] = body["status"]
    else:
        new.pop("status", None)
    if "managedFields" in body["metadata"]:
        new["metadata"]["managedFields"] = body["metadata"]["managedFields"]
    return new


def _spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")}


def _same_spec(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return patches.same(_spec_part(old), _spec_part(new))


def _comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without what every write changes anyway: resourceVersion and managedFields timestamps."""
    metadata = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
    if "managedFields" in metadata:
        metadata["managedFields"] = [
            {k: v for k, v in entry.items() if k != "time"} for entry in metadata["managedFields"]
        ]
    return {**obj, "metadata": metadata}


def _unchanged(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return patches.same(_comparable(old), _comparable(new))


def _check_new_finalizers(rt: ResourceType, old: dict[str, Any], new: dict[str, Any]) -> None:
    if not old["metadata"].get("deletionTimestamp"):
        return
    before = set(old["metadata"].get("finalizers") or ())
    added = [f for f in new["metadata"].get("finalizers") or () if f not in before]
    if added:
        listed = ", ".join(f'"{f}"' for f in added)
        cause = {
            "reason": "FieldValueForbidden",
            "message": f"Forbidden: no new finalizers can be added if the object is being deleted, "
            f"found new finalizers []string{{{listed}}}",
            "field": "metadata.finalizers",
        }
        raise status.invalid(rt.kind, rt.group, old["metadata"]["name"], [cause])


def _grace_period(rt: ResourceType, obj: dict[str, Any], requested: int | None) -> int:
    """Pods bound to a node die gracefully; everything else (and unbound or finished pods) at once."""
    if (rt.group, rt.kind) != ("", "Pod"):
        return 0
    spec = obj.get("spec") or {}
    if not spec.get("nodeName") or (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return 0
    if requested is None:
        requested = spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_PERIOD_SECONDS)
    return max(int(requested or 0), 0)


def _propagation_policy(policy: str) -> str:
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
