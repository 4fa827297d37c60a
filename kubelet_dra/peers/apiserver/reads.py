"""Reading one resource's table: a page of a list, and where a new watch's events start.

A paged list reads from the snapshot its first page came from (``paging.Snapshots``), so its
pages are consistent as etcd's are. A watch starts with ADDED events for the current objects
(resourceVersion "" or "0", or ``sendInitialEvents``, ended by a BOOKMARK), with nothing, or with
the channel's replay of the changes after the resourceVersion it gives; then it follows the
channel, which fans every committed change out to the table's watchers.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable, Iterator

from kubelet_dra.peers.apiserver import paging, status
from kubelet_dra.peers.apiserver.objectmap import Table
from kubelet_dra.peers.apiserver.paging import ListResult
from kubelet_dra.peers.apiserver.selectors import Selection
from kubelet_dra.peers.apiserver.status import ApiError
from kubelet_dra.peers.apiserver.watch import BOOKMARK, Watch, WatchEvent, bookmark_object, initial_events, translate


def list_page(
    table: Table, snapshots: paging.Snapshots, selection: Selection, current_rv: int, limit: int, continue_token: str
) -> ListResult:
    """The selected objects of ``table`` in key order; with ``limit``, a page and a continue token."""
    start = ""
    if continue_token:
        list_rv, start = paging.decode_continue(continue_token)
        view, list_rv = snapshots.continued(
            table.resource_id,
            list_rv,
            start,
            current=table.view(),
            current_rv=current_rv,
            changed_at=table.changed_at,
        )
    else:
        view, list_rv = table.view(), current_rv
    low, high = view.bounds(selection.namespace)
    if start:
        low = max(low, bisect.bisect_left(view.keys, start))
    items, next_index = paging.page(view, low, high, selection, limit)
    if next_index is None:
        return ListResult(items, str(list_rv))
    snapshots.remember(table.resource_id, list_rv, view)
    token = paging.encode_continue(list_rv, view.keys[next_index])
    remaining = None if selection.filters else high - next_index
    return ListResult(items, str(list_rv), token, remaining)


def parse_watch_version(text: str, current_rv: int) -> int:
    """The resourceVersion a watch starts after (0 = none given); 504 for one this server never reached."""
    if not text:
        return 0
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise status.bad_request(f'invalid resource version: "{text}"')
    if value > current_rv:
        details = {
            "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
            "retryAfterSeconds": 1,
        }
        message = f"Timeout: Too large resource version: {value}, current: {current_rv}"
        raise ApiError(504, "Timeout", message, details)
    return value


def open_watch(
    table: Table,
    selection: Selection,
    since: int,
    *,
    send_initial_events: bool | None,
    allow_bookmarks: bool,
    current_resource_version: Callable[[], int],
    queue_size: int,
) -> Watch:
    """A watch of ``table`` subscribed to its channel, its first events chosen as the module docstring says."""
    events: Iterator[WatchEvent]
    if send_initial_events or (send_initial_events is None and not since):
        view = table.view()
        low, high = view.bounds(selection.namespace)
        events = initial_events(view.objects[low:high], selection)
        if send_initial_events:
            end = WatchEvent(BOOKMARK, bookmark_object(table.rt, current_resource_version(), initial_events_end=True))
            events = itertools.chain(events, (end,))
    elif not since:
        events = iter(())
    else:
        replay = (translate(change, selection) for change in table.channel.since(since))
        events = iter([event for event in replay if event is not None])
    watcher = Watch(
        table.rt,
        selection,
        events,
        allow_bookmarks=allow_bookmarks,
        current_resource_version=current_resource_version,
        queue_size=queue_size,
        on_close=table.channel.unsubscribe,
    )
    table.channel.subscribe(watcher)
    return watcher
