"""Watches over HTTP: one chunked stream of ``{"type", "object"}`` events.

JSON clients get one event per line; protobuf clients get ``;stream=watch`` frames (a length,
then a WatchEvent), as kube-apiserver sends them.

The stream ends when ``timeoutSeconds`` runs out (the server's default when absent or 0; a negative
one ends it at once, as in kube-apiserver), when the client goes away, or when the server stops;
clients then re-watch from their last resourceVersion.
A watch from a resourceVersion the store no longer remembers is answered like kube-apiserver
does: HTTP 200 and a single ERROR event carrying the 410 Expired Status.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from aiohttp import web

from kubelet_dra.peers.apiserver import params, status, tables
from kubelet_dra.peers.apiserver.negotiation import Rendering, Shape, encode_json
from kubelet_dra.peers.apiserver.presentation import View
from kubelet_dra.peers.apiserver.routes import ResourcePath
from kubelet_dra.peers.apiserver.status import ApiError
from kubelet_dra.peers.apiserver.store import Store
from kubelet_dra.peers.apiserver.watch import Watch, WatchEvent
from kubelet_dra.peers.kubeproto import mapping

OBJECT_EVENTS = frozenset({"ADDED", "MODIFIED", "DELETED"})


def _invalid_list_options(field: str, message: str) -> ApiError:
    return status.invalid(
        "ListOptions", "meta.k8s.io", "", [{"reason": "FieldValueForbidden", "message": message, "field": field}]
    )


class WatchStreams:
    """Serves watch requests and ends every open stream when the server stops."""

    def __init__(self, store: Store, *, bookmark_interval: float, default_timeout: float) -> None:
        self._store = store
        self._bookmark_interval = bookmark_interval
        self._default_timeout = default_timeout
        self._open: set[Watch] = set()
        self._stopped = False

    @property
    def open_count(self) -> int:
        return len(self._open)

    def close_all(self) -> None:
        """End every open stream and refuse new ones: a client that watches again at once, on a connection
        the server has not closed yet, would otherwise hold the server's shutdown open."""
        self._stopped = True
        for watch in list(self._open):
            watch.close()

    async def serve(self, request: web.Request, target: ResourcePath, view: View) -> web.StreamResponse:
        if self._stopped:
            raise ApiError(503, "ServiceUnavailable", "the API server is shutting down")
        query = request.query
        allow_bookmarks = bool(params.boolean(query, "allowWatchBookmarks"))
        send_initial_events = params.boolean(query, "sendInitialEvents")
        match = query.get("resourceVersionMatch", "")
        if send_initial_events is None and match:
            raise _invalid_list_options(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            )
        if send_initial_events is not None and match != "NotOlderThan":
            raise _invalid_list_options(
                "resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
            )
        if send_initial_events and not allow_bookmarks:
            raise _invalid_list_options(
                "allowWatchBookmarks", "sendInitialEvents requires setting allowWatchBookmarks to true"
            )
        timeout = params.integer(query, "timeoutSeconds")
        field_selector = query.get("fieldSelector", "")
        if target.name is not None:
            field_selector = ",".join(filter(None, (f"metadata.name={target.name}", field_selector)))
        response = web.StreamResponse(
            headers={"Content-Type": view.rendering.stream_content_type, "Cache-Control": "no-cache, private"}
        )
        response.enable_chunked_encoding()
        if timeout is not None and timeout < 0:
            deadline = ApiError(500, "InternalError", "context deadline exceeded")
            return await _error_event(request, response, view, deadline)
        try:
            watch = self._store.watch(
                target.rt,
                target.namespace,
                label_selector=query.get("labelSelector", ""),
                field_selector=field_selector,
                resource_version=query.get("resourceVersion", ""),
                send_initial_events=send_initial_events,
                allow_bookmarks=allow_bookmarks,
            )
        except ApiError as err:
            if err.code != 410:
                raise
            return await _error_event(request, response, view, err)
        self._open.add(watch)
        bookmarks = asyncio.create_task(self._bookmarks(watch)) if allow_bookmarks else None
        try:
            await response.prepare(request)
            async with asyncio.timeout(timeout or self._default_timeout):
                async for event in watch:
                    await response.write(encode_event(view.rendering, event.type, present(view, event)))
        except (TimeoutError, ConnectionResetError):
            pass
        finally:
            self._open.discard(watch)
            watch.close()
            if bookmarks is not None:
                bookmarks.cancel()
        with contextlib.suppress(ConnectionResetError):
            await response.write_eof()
        return response

    async def _bookmarks(self, watch: Watch) -> None:
        while True:
            await asyncio.sleep(self._bookmark_interval)
            watch.bookmark()


async def _error_event(
    request: web.Request, response: web.StreamResponse, view: View, error: ApiError
) -> web.StreamResponse:
    """A watch that cannot start is answered as kube-apiserver does: 200 and one ERROR event with the Status."""
    await response.prepare(request)
    await response.write(encode_event(view.rendering, "ERROR", error.to_status()))
    await response.write_eof()
    return response


def encode_event(rendering: Rendering, event_type: str, document: dict[str, Any]) -> bytes:
    """One event on the wire: a protobuf frame or a JSON line."""
    if rendering.protobuf:
        return mapping.encode_watch_event(event_type, document)
    return encode_json({"type": event_type, "object": document}) + b"\n"


def present(view: View, event: WatchEvent) -> dict[str, Any]:
    """An event's object as the watcher asked for it; ERROR events carry a Status as is."""
    if event.type in OBJECT_EVENTS:
        return view.object(event.object)
    if event.type != "BOOKMARK":
        return event.object
    shape = view.rendering.shape
    if shape is Shape.METADATA:
        return tables.partial_metadata(event.object, view.rendering.meta_api_version)
    if shape is Shape.TABLE:
        return view.table([], {"resourceVersion": str(event.object.get("metadata", {}).get("resourceVersion", ""))})
    return {**event.object, "apiVersion": view.rt.api_version(view.version)}
