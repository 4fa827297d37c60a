"""Paged lists: sorted views, continue tokens and the snapshots that keep pages consistent.

A paged list reads every page from the snapshot its first page came from, as etcd-backed
kube-apiserver does; a token whose snapshot is gone gets 410 Expired with a token that finishes
the list from the current state.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import collections
import json
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import attrs

from kubelet_dra.peers.apiserver import selectors, status
from kubelet_dra.peers.apiserver.status import ApiError

CONTINUE_EXPIRED_MESSAGE = (
    "The provided continue parameter is too old to display a consistent list result. You can start a new list "
    "without the continue parameter, or use the continue token in this response to retrieve the remainder of the "
    "results. Continuing with the provided token results in an inconsistent list - objects that were created, "
    "modified, or deleted between the time the first chunk was returned and now may show up in the list."
)
# Paged lists read from a snapshot kept this long (like etcd's compaction window), at most this many at once.
SNAPSHOT_TTL = timedelta(minutes=5)
MAX_SNAPSHOTS = 64
_CONTINUE_VERSION = "meta.k8s.io/v1"


@attrs.frozen
class ListResult:
    items: list[dict[str, Any]]
    resource_version: str
    continue_token: str = ""
    remaining: int | None = None


class ContinueExpired(ApiError):
    """410 for a continue token whose snapshot is gone; carries a token that finishes the list inconsistently."""

    def __init__(self, continue_token: str) -> None:
        super().__init__(410, "Expired", CONTINUE_EXPIRED_MESSAGE)
        self.continue_token = continue_token

    def to_status(self) -> dict[str, Any]:
        result = super().to_status()
        result["metadata"] = {"continue": self.continue_token}
        return result


@attrs.frozen
class View:
    """One resource's objects sorted by key ("<namespace>/<name>" or "<name>"); never changed once built."""

    keys: list[str]
    objects: list[dict[str, Any]]

    def bounds(self, namespace: str | None) -> tuple[int, int]:
        if namespace is None:
            return 0, len(self.keys)
        # "0" is the character right after "/": keys of the namespace sort in [ns + "/", ns + "0").
        return bisect.bisect_left(self.keys, namespace + "/"), bisect.bisect_left(self.keys, namespace + "0")


class Snapshots:
    """The views handed out with continue tokens, by (resource, list resourceVersion), oldest dropped first."""

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self._clock = clock
        self._views: collections.OrderedDict[tuple[str, int], tuple[View, datetime]] = collections.OrderedDict()

    def continued(
        self, resource_id: str, list_rv: int, start: str, *, current: View, current_rv: int, changed_at: int
    ) -> tuple[View, int]:
        """The snapshot a continue token reads from; a token from an expired snapshot gets 410."""
        if list_rv <= 0:  # the inconsistent token handed out with a 410: continue from the current state
            return current, current_rv
        remembered = self._views.get((resource_id, list_rv))
        if remembered is not None:
            self._views.move_to_end((resource_id, list_rv))
            return remembered[0], list_rv
        if changed_at <= list_rv:  # nothing changed since: the current state is that snapshot
            return current, list_rv
        raise ContinueExpired(encode_continue(-1, start))

    def remember(self, resource_id: str, list_rv: int, view: View) -> None:
        now = self._clock()
        self._views.setdefault((resource_id, list_rv), (view, now))
        self._views.move_to_end((resource_id, list_rv))
        for key, (_, taken) in list(self._views.items()):
            if len(self._views) > MAX_SNAPSHOTS or now - taken > SNAPSHOT_TTL:
                del self._views[key]


def page(
    view: View, low: int, high: int, selection: selectors.Selection, limit: int
) -> tuple[list[dict[str, Any]], int | None]:
    """Up to ``limit`` (0 = all) selected objects from view[low:high], and the index of the next selected one."""
    objects = view.objects
    if not selection.filters:
        end = high if limit <= 0 else min(high, low + limit)
        return objects[low:end], end if end < high else None
    matches = selection.matches
    items: list[dict[str, Any]] = []
    index = low
    while index < high and (limit <= 0 or len(items) < limit):
        if matches(objects[index]):
            items.append(objects[index])
        index += 1
    next_index = next((i for i in range(index, high) if matches(objects[i])), None)
    return items, next_index


def encode_continue(list_rv: int, start: str) -> str:
    raw = json.dumps({"v": _CONTINUE_VERSION, "rv": list_rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token: str) -> tuple[int, str]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        if not isinstance(raw, dict) or raw.get("v") != _CONTINUE_VERSION:
            raise ValueError("incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
        list_rv, start = raw["rv"], raw["start"]
        if not isinstance(list_rv, int) or not isinstance(start, str):
            raise ValueError("malformed token")
    except (ValueError, KeyError, binascii.Error, UnicodeDecodeError) as err:
        raise status.bad_request(f"invalid continue token: continue key is not valid: {err}") from None
    return list_rv, start
