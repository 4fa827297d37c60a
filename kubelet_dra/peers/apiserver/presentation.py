"""How stored objects leave the server: at the URL's version, in the negotiated shape and encoding.

Single objects, lists and watch events all pass through here, so a Table, a metadata-only view
or a converted object looks the same whichever verb produced it.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import Any

import attrs
from aiohttp import web
from multidict import CIMultiDict

from kubelet_dra.peers.apiserver import conversion, negotiation, tables
from kubelet_dra.peers.apiserver.negotiation import Rendering, Shape
from kubelet_dra.peers.apiserver.resources import ResourceType
from kubelet_dra.peers.apiserver.status import ApiError
from kubelet_dra.peers.gotext import go_quote


def at_version(rt: ResourceType, version: str, obj: dict[str, Any]) -> dict[str, Any]:
    """A stored object as served at ``version``; stored objects already are at the storage version."""
    return obj if version == rt.storage_version else conversion.from_storage(rt, version, obj)


@attrs.frozen
class View:
    """One request's way of presenting objects: resource, URL version, negotiated rendering, table options."""

    rt: ResourceType
    version: str
    rendering: Rendering
    include_object: str
    clock: Callable[[], datetime.datetime]

    def table(self, objects: Sequence[dict[str, Any]], list_meta: dict[str, Any]) -> dict[str, Any]:
        return tables.table(
            self.rt,
            objects,
            meta_api_version=self.rendering.meta_api_version,
            list_meta=list_meta,
            include_object=self.include_object,
            now=self.clock(),
        )

    def object(self, stored: dict[str, Any]) -> dict[str, Any]:
        """One stored object as the client asked for it."""
        served = at_version(self.rt, self.version, stored)
        shape = self.rendering.shape
        if shape is Shape.TABLE:
            resource_version = str((served.get("metadata") or {}).get("resourceVersion", ""))
            return self.table([served], {"resourceVersion": resource_version})
        if shape is Shape.METADATA:
            return tables.partial_metadata(served, self.rendering.meta_api_version)
        return served

    def list(self, stored: Sequence[dict[str, Any]], list_meta: dict[str, Any]) -> dict[str, Any]:
        """A list of stored objects as the client asked for it (a ``<Kind>List``, Table or metadata list)."""
        served = [at_version(self.rt, self.version, item) for item in stored]
        shape = self.rendering.shape
        if shape is Shape.TABLE:
            return self.table(served, list_meta)
        if shape is Shape.METADATA:
            meta_version = self.rendering.meta_api_version
            items = [tables.partial_metadata(item, meta_version) for item in served]
            return {
                "kind": "PartialObjectMetadataList",
                "apiVersion": meta_version,
                "metadata": list_meta,
                "items": items,
            }
        return {
            "kind": self.rt.list_kind,
            "apiVersion": self.rt.api_version(self.version),
            "metadata": list_meta,
            "items": [without_type_meta(item) for item in served],
        }


def without_type_meta(obj: dict[str, Any]) -> dict[str, Any]:
    """A list item as kube-apiserver writes it: the list names the kind and apiVersion, its items do not."""
    return {key: value for key, value in obj.items() if key not in ("kind", "apiVersion")}


def respond(code: int, document: Any, rendering: Rendering, warnings: Sequence[str] = ()) -> web.Response:
    """An HTTP response carrying ``document``; ``warnings`` become ``Warning: 299`` headers as kube sends them."""
    headers = CIMultiDict({"Content-Type": rendering.content_type})
    for warning in warnings:
        headers.add("Warning", f"299 - {go_quote(warning)}")
    return web.Response(status=code, body=rendering.encode(document), headers=headers)


def status_response(error: ApiError, accept: str | None) -> web.Response:
    """The ``Status`` object for a failure: protobuf for a client that prefers it, else JSON (as kube-apiserver)."""
    return respond(error.code, error.to_status(), negotiation.error_rendering(accept))
