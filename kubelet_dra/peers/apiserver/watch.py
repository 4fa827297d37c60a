"""Watches: each resource's recent history of changes and the fan-out of new changes to watchers.

A change is delivered to every watcher of its resource in O(watchers), never O(objects); a watcher whose field
selector requires a value (a node's pods, ``spec.nodeName=<node>``) is filed under that value and offered only the
changes whose object has it before or after, as kube-apiserver's watch cache indexes pods by node: a thousand
nodes' pod watches cost a pod write two lookups, not a thousand selector matches.
Each watcher buffers at most ``queue_size`` events; a watcher that falls further behind is
closed, as kube-apiserver closes a slow watch, so its client re-watches (or re-lists) instead
of making writers wait.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import attrs

from kubelet_dra.peers.apiserver import status
from kubelet_dra.peers.apiserver.resources import ResourceType
from kubelet_dra.peers.apiserver.selectors import Selection, field_value

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"
BOOKMARK = "BOOKMARK"
ERROR = "ERROR"
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


@attrs.frozen
class WatchEvent:
    """One event of a watch stream; ``object`` is at the storage version and must not be mutated."""

    type: str
    object: dict[str, Any]


@attrs.frozen
class Change:
    """One committed write as the history keeps it; ``previous`` lets selector-filtered watches see transitions."""

    resource_version: int
    type: str
    object: dict[str, Any]
    previous: dict[str, Any] | None


def translate(change: Change, selection: Selection) -> WatchEvent | None:
    """The event a watcher with ``selection`` sees for ``change``, if any.

    An update that moves an object out of the selection reads as DELETED and one that moves it
    in reads as ADDED, the way kube-apiserver reports them.
    """
    matches = selection.matches(change.object)
    if change.type != MODIFIED:
        return WatchEvent(change.type, change.object) if matches else None
    matched = change.previous is not None and selection.matches(change.previous)
    if matches:
        return WatchEvent(MODIFIED if matched else ADDED, change.object)
    return WatchEvent(DELETED, change.object) if matched else None


def bookmark_object(rt: ResourceType, resource_version: int, *, initial_events_end: bool = False) -> dict[str, Any]:
    """A BOOKMARK's object: only apiVersion, kind and the resourceVersion (+ the end-of-initial-events mark)."""
    metadata: dict[str, Any] = {"resourceVersion": str(resource_version)}
    if initial_events_end:
        metadata["annotations"] = {INITIAL_EVENTS_END: "true"}
    return {"apiVersion": rt.api_version(rt.storage_version), "kind": rt.kind, "metadata": metadata}


def initial_events(objects: Iterable[dict[str, Any]], selection: Selection) -> Iterator[WatchEvent]:
    """Synthetic ADDED events for the current objects a watch selects, produced lazily."""
    return (WatchEvent(ADDED, obj) for obj in objects if selection.matches(obj))


class Watch:
    """One watcher: ``async for event in watch`` until ``close()``, or until it overflowed (``overflowed``).

    Events already known when the watch starts (initial ADDED events or replayed history) come
    first, then live changes in commit order.
    """

    def __init__(
        self,
        rt: ResourceType,
        selection: Selection,
        initial: Iterator[WatchEvent],
        *,
        allow_bookmarks: bool,
        current_resource_version: Callable[[], int],
        queue_size: int,
        on_close: Callable[[Watch], None],
    ) -> None:
        self.rt = rt
        self.selection = selection
        self.overflowed = False
        self._initial: Iterator[WatchEvent] | None = initial
        self._allow_bookmarks = allow_bookmarks
        self._current_resource_version = current_resource_version
        self._queue: collections.deque[WatchEvent] = collections.deque()
        self._queue_size = queue_size
        self._on_close = on_close
        self._closed = False
        self._wakeup = asyncio.Event()

    @property
    def closed(self) -> bool:
        return self._closed

    def deliver(self, change: Change) -> None:
        """Queue the event ``change`` means to this watcher (called by the channel on every commit)."""
        event = translate(change, self.selection)
        if event is not None:
            self._push(event)

    def bookmark(self) -> None:
        """Queue a BOOKMARK at the current resourceVersion; does nothing unless the client allowed bookmarks."""
        if self._allow_bookmarks:
            self._push(WatchEvent(BOOKMARK, bookmark_object(self.rt, self._current_resource_version())))

    def close(self) -> None:
        """End the stream: iteration stops and the watcher stops receiving changes."""
        if self._closed:
            return
        self._closed = True
        self._initial = None
        self._queue.clear()
        self._on_close(self)
        self._wakeup.set()

    def _push(self, event: WatchEvent) -> None:
        if self._closed:
            return
        if len(self._queue) >= self._queue_size:
            self.overflowed = True
            self.close()
            return
        self._queue.append(event)
        self._wakeup.set()

    def __aiter__(self) -> Watch:
        return self

    async def __anext__(self) -> WatchEvent:
        while not self._closed:
            if self._initial is not None:
                event = next(self._initial, None)
                if event is not None:
                    return event
                self._initial = None
            if self._queue:
                return self._queue.popleft()
            self._wakeup.clear()
            await self._wakeup.wait()
        raise StopAsyncIteration


FieldKey = tuple[str, tuple[str, ...]]
"""A field selector's field and its path in the object."""


class Channel:
    """One resource's change history (a ring of ``history_size`` changes) and its watchers."""

    def __init__(self, history_size: int, resource_version: int) -> None:
        self._history: collections.deque[Change] = collections.deque(maxlen=max(history_size, 1))
        # A watch may start from any resourceVersion >= this one: every later change is still in the ring.
        self._covered_from = resource_version
        self._watchers: set[Watch] = set()
        """Watchers offered every change."""
        self._keyed: dict[FieldKey, dict[str, set[Watch]]] = {}
        """Watchers whose selection requires a field's value: field → value → watchers."""

    @property
    def watcher_count(self) -> int:
        return len(self._watchers) + sum(len(group) for values in self._keyed.values() for group in values.values())

    def publish(self, change: Change) -> None:
        if len(self._history) == self._history.maxlen:
            self._covered_from = self._history[0].resource_version
        self._history.append(change)
        for watcher in [*self._watchers, *self._keyed_watchers(change)]:
            watcher.deliver(change)

    def _keyed_watchers(self, change: Change) -> Iterator[Watch]:
        """The keyed watchers whose value the object has, before or after the change: no other can see it."""
        for (field, path), groups in self._keyed.items():
            value = field_value(change.object, field, path)
            yield from groups.get(value, ())
            if change.previous is not None and (before := field_value(change.previous, field, path)) != value:
                yield from groups.get(before, ())

    def since(self, resource_version: int) -> list[Change]:
        """The changes after ``resource_version``; 410 Expired when the ring no longer reaches back that far."""
        if resource_version < self._covered_from:
            raise status.expired(f"too old resource version: {resource_version} ({self._covered_from})")
        changes = []
        for change in reversed(self._history):
            if change.resource_version <= resource_version:
                break
            changes.append(change)
        changes.reverse()
        return changes

    def subscribe(self, watcher: Watch) -> None:
        term = watcher.selection.key_term
        if term is None:
            self._watchers.add(watcher)
        else:
            self._keyed.setdefault((term.field, term.path), {}).setdefault(term.value, set()).add(watcher)

    def unsubscribe(self, watcher: Watch) -> None:
        term = watcher.selection.key_term
        if term is None:
            self._watchers.discard(watcher)
            return
        groups = self._keyed.get((term.field, term.path), {})
        group = groups.get(term.value, set())
        group.discard(watcher)
        if not group:
            groups.pop(term.value, None)
