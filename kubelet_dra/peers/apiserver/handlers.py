"""The resource verbs over HTTP: get, list, watch, create, update, patch, delete, deletecollection.

Each handler turns one request into one store call, converting bodies to the storage version
on the way in and every object (single, listed or watched) to the URL's version on the way out,
and rendering it as the client negotiated (object, Table, metadata; JSON or YAML). Name and
namespace checks, DeleteOptions, field validation and node restriction happen here, before
the store sees the request, in the order kube-apiserver applies them.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import attrs
from aiohttp import web

from kubelet_dra.peers.apiserver import conversion, decoding, jsonbody, negotiation, params, patch, status, tables
from kubelet_dra.peers.apiserver.auth import READ_VERBS, User, authorize_collection, authorize_write
from kubelet_dra.peers.apiserver.presentation import View, respond
from kubelet_dra.peers.apiserver.resources import RESOURCE_GROUP, ResourceType
from kubelet_dra.peers.apiserver.routes import ResourcePath
from kubelet_dra.peers.apiserver.status import ApiError
from kubelet_dra.peers.apiserver.store import Store
from kubelet_dra.peers.apiserver.streaming import WatchStreams

USER = web.RequestKey("user", User)
VERB = web.RequestKey("verb", str)
MAX_BODY_BYTES = 3 * 1024 * 1024
"""kube-apiserver's request body limit (``--max-request-bytes`` default)."""


def returns_deleted_object(rt: ResourceType) -> bool:
    """Pods and every resource.k8s.io kind answer a delete with the object; other core kinds with a Status.

    Clients decode the answer as the type their API description promises, so this follows kube-apiserver.
    """
    return rt.group == RESOURCE_GROUP or (rt.group == "" and rt.plural == "pods")


def method_not_allowed() -> ApiError:
    return status.method_not_allowed("the server does not allow this method on the requested resource")


class ResourceHandler:
    """Serves every resource in ``RESOURCES`` from one ``Store``; ``streams`` tracks open watches."""

    def __init__(
        self,
        store: Store,
        streams: WatchStreams,
        *,
        node_restricted: bool,
        clock: Callable[[], datetime.datetime],
    ) -> None:
        self._store = store
        self._streams = streams
        self._node_restricted = node_restricted
        self._clock = clock
        self._verbs: dict[str, Callable[[Call], web.Response]] = {
            "get": self._get,
            "list": self._list,
            "create": self._create,
            "update": self._update,
            "patch": self._patch,
            "delete": self._delete,
            "deletecollection": self._deletecollection,
        }

    async def handle(self, request: web.Request, target: ResourcePath) -> web.StreamResponse:
        verb = self._verb(request, target)
        request[VERB] = verb
        user = request[USER]
        if self._node_restricted and verb not in READ_VERBS:
            authorize_write(user, verb, target.rt, target.namespace, target.name or "", target.subresource, ())
        if self._node_restricted:
            authorize_collection(user, verb, target.rt, request.query.get("fieldSelector", ""))
        rendering = negotiation.negotiate_resource(request.headers.get("Accept"), streaming=verb == "watch")
        include_object = tables.parse_include_object(request.query.get("includeObject"))
        view = View(target.rt, target.version, rendering, include_object, self._clock)
        if verb == "watch":
            return await self._streams.serve(request, target, view)
        body = await _read_body(request) if request.method in ("POST", "PUT", "PATCH", "DELETE") else b""
        return self._verbs[verb](Call(request, target, view, body))

    @staticmethod
    def _verb(request: web.Request, target: ResourcePath) -> str:
        method = request.method
        if target.legacy_watch:
            if method != "GET":
                raise method_not_allowed()
            return "watch"
        if method == "GET":
            if not target.is_collection:
                return "get"
            return "watch" if params.boolean(request.query, "watch") else "list"
        if target.is_collection:
            if target.rt.namespaced and target.namespace is None:
                raise method_not_allowed()
            verbs = {"POST": "create", "DELETE": "deletecollection"}
        else:
            verbs = {"PUT": "update", "PATCH": "patch"} | ({} if target.subresource else {"DELETE": "delete"})
        verb = verbs.get(method)
        if verb is None:
            raise method_not_allowed()
        return verb

    # --- reads -------------------------------------------------------------------------------

    def _get(self, call: Call) -> web.Response:
        target = call.target
        return call.respond(200, self._store.get(target.rt, target.namespace, target.name))

    def _list(self, call: Call) -> web.Response:
        query = call.query
        result = self._store.list(
            call.target.rt,
            call.target.namespace,
            label_selector=query.get("labelSelector", ""),
            field_selector=query.get("fieldSelector", ""),
            limit=max(params.integer(query, "limit") or 0, 0),
            continue_token=query.get("continue", ""),
        )
        list_meta: dict[str, Any] = {"resourceVersion": result.resource_version}
        if result.continue_token:
            list_meta["continue"] = result.continue_token
        if result.remaining is not None:
            list_meta["remainingItemCount"] = result.remaining
        return call.respond_list(result.items, list_meta)

    # --- writes ------------------------------------------------------------------------------

    def _authorize(self, call: Call, verb: str, objects: Iterable[dict[str, Any]]) -> None:
        target = call.target
        authorize_write(call.user, verb, target.rt, target.namespace, target.name or "", target.subresource, objects)

    def _judges_objects(self, call: Call) -> bool:
        """Whether node restriction must see the objects a write touches (only node users are judged on them)."""
        return self._node_restricted and call.user.node_name is not None

    def _exists(self, target: ResourcePath) -> bool:
        try:
            self._store.get(target.rt, target.namespace, target.name)
        except ApiError as err:
            if err.code == 404:
                return False
            raise
        return True

    def _create(self, call: Call) -> web.Response:
        obj, warnings = call.decode()
        if self._judges_objects(call):
            self._authorize(call, "create", [obj])
        created = self._store.create(call.target.rt, call.target.namespace, obj, dry_run=call.dry_run)
        return call.respond(201, created, warnings)

    def _update(self, call: Call) -> web.Response:
        target = call.target
        obj, warnings = call.decode()
        name = obj["metadata"].get("name")
        if name != target.name:
            raise status.bad_request(
                f"the name of the object ({name or ''}) does not match the name on the URL ({target.name})"
            )
        if self._judges_objects(call):
            self._authorize(call, "update", [self._store.get(target.rt, target.namespace, target.name), obj])
        updated = self._store.update(
            target.rt, target.namespace, target.name, obj, subresource=target.subresource, dry_run=call.dry_run
        )
        return call.respond(200, updated, warnings)

    def _patch(self, call: Call) -> web.Response:
        target, query = call.target, call.query
        patch_type = negotiation.body_media_type(call.request.headers.get("Content-Type"))
        if patch_type not in patch.accepted_types(target.rt.strategic_merge):
            raise patch.unsupported_media_type()
        field_manager = query.get("fieldManager", "")
        force = params.boolean(query, "force")
        if force is not None and patch_type != patch.APPLY_PATCH:
            cause = {
                "reason": "FieldValueForbidden",
                "message": "may not be specified for non-apply patch",
                "field": "force",
            }
            raise status.invalid("PatchOptions", "meta.k8s.io", "", [cause])
        decode = self._patch_decoding(call, patch_type)
        created = patch_type == patch.APPLY_PATCH and not self._exists(target)

        def patched(dry_run: bool) -> dict[str, Any]:
            return self._store.patch(
                target.rt,
                target.version,
                target.namespace,
                target.name,
                patch_type,
                call.body,
                subresource=target.subresource,
                field_manager=field_manager,
                force=bool(force),
                dry_run=dry_run,
                decode=decode,
            )

        if self._judges_objects(call):
            old = [] if created else [self._store.get(target.rt, target.namespace, target.name)]
            self._authorize(call, "patch", [*old, patched(True)])
        return call.respond(201 if created else 200, patched(call.dry_run), decode.warnings)

    @staticmethod
    def _patch_decoding(call: Call, patch_type: str) -> decoding.PatchDecoding:
        """How the patch's result is decoded; a merge patch's field warnings are its body's."""
        target = call.target
        body_errors = None
        if patch_type in (patch.MERGE_PATCH, patch.STRATEGIC_MERGE_PATCH):
            try:
                body_errors = decoding.body_strict_errors(target.rt, target.version, jsonbody.loads(call.body))
            except ValueError:
                body_errors = ()  # the store reports the malformed patch
        directive = params.field_validation(call.query)
        return decoding.PatchDecoding(target.rt, target.version, directive, body_errors)

    def _delete(self, call: Call) -> web.Response:
        target, rt = call.target, call.target.rt
        options = call.delete_options()
        if self._judges_objects(call):
            self._authorize(call, "delete", [self._store.get(rt, target.namespace, target.name)])
        deleted = self._store.delete(
            rt,
            target.namespace,
            target.name,
            grace_period_seconds=options.grace_period_seconds,
            propagation_policy=options.propagation_policy,
            preconditions=options.preconditions,
            dry_run=options.dry_run,
        )
        if returns_deleted_object(rt) or options.dry_run or self._exists(target):
            return call.respond(200, deleted)
        details = {"name": target.name, **({"group": rt.group} if rt.group else {}), "kind": rt.plural}
        uid = (deleted.get("metadata") or {}).get("uid")
        if uid:
            details["uid"] = uid
        success = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}
        return respond(200, success, negotiation.error_rendering(call.request.headers.get("Accept")))

    def _deletecollection(self, call: Call) -> web.Response:
        target = call.target
        options = call.delete_options()
        selectors = {
            "label_selector": call.query.get("labelSelector", ""),
            "field_selector": call.query.get("fieldSelector", ""),
        }
        if options.dry_run or self._judges_objects(call):
            deleted = list(self._store.list(target.rt, target.namespace, **selectors).items)
            if self._judges_objects(call):
                self._authorize(call, "deletecollection", deleted)
        if not options.dry_run:
            deleted = self._store.delete_collection(
                target.rt,
                target.namespace,
                **selectors,
                grace_period_seconds=options.grace_period_seconds,
                propagation_policy=options.propagation_policy,
            )
        return call.respond_list(deleted, {"resourceVersion": str(self._store.resource_version)})


@attrs.frozen
class Call:
    """One resource request being served: the HTTP request, what it addresses, how to answer, its body."""

    request: web.Request
    target: ResourcePath
    view: View
    body: bytes

    @property
    def query(self) -> params.Query:
        return self.request.query

    @property
    def user(self) -> User:
        return self.request[USER]

    @property
    def dry_run(self) -> bool:
        return params.dry_run(self.query.getall("dryRun", []))

    def respond(self, code: int, stored: dict[str, Any], warnings: Sequence[str] = ()) -> web.Response:
        return respond(code, self.view.object(stored), self.view.rendering, warnings)

    def respond_list(self, stored: Sequence[dict[str, Any]], list_meta: dict[str, Any]) -> web.Response:
        return respond(200, self.view.list(stored, list_meta), self.view.rendering)

    def delete_options(self) -> params.DeleteOptions:
        body = (
            negotiation.decode_object(self.request.headers.get("Content-Type"), self.body, "DeleteOptions")
            if self.body.strip()
            else None
        )
        return params.delete_options(self.query, body)

    def decode(self) -> tuple[dict[str, Any], list[str]]:
        """The request's object at the storage version, checked against the URL, plus field warnings."""
        rt = self.target.rt
        obj = negotiation.decode_object(self.request.headers.get("Content-Type"), self.body, rt.kind)
        expected = rt.api_version(self.target.version)
        api_version, kind = obj.get("apiVersion"), obj.get("kind")
        if api_version and api_version != expected:
            raise status.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version ({expected})"
            )
        if kind and kind != rt.kind:
            raise status.bad_request(f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})")
        obj, warnings = decoding.decode_body(rt, self.target.version, obj, params.field_validation(self.query))
        obj.setdefault("metadata", {})
        return conversion.to_storage(rt, {**obj, "apiVersion": expected, "kind": rt.kind}), warnings


async def _read_body(request: web.Request) -> bytes:
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge:
        raise ApiError(413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_BODY_BYTES}") from None
