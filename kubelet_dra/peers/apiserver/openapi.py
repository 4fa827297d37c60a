"""OpenAPI v3 documents: what kubectl reads before it creates, applies or explains anything.

kubectl (``--validate=strict``, its default) looks for the ``fieldValidation`` query parameter on
the PATCH operation of the object's kind in ``/openapi/v3/<group-version>``; finding it, kubectl
leaves validation to the server. ``kubectl apply`` looks at the same operation's request body
types: we deliberately do not list strategic merge patch there, so kubectl computes its patches
from the types compiled into it (strategic merge for core kinds) or, for resource.k8s.io kinds it
does not know, as JSON merge patches, which every resource here accepts. ``kubectl explain``
finds each kind by its ``x-kubernetes-group-version-kind``.

The schemas describe the top-level fields of every kind.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from kubelet_dra.peers.apiserver.resources import RESOURCES, ResourceType, groups

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
OPENAPI_TITLE = "Kubernetes"
OPENAPI_VERSION = "3.0.0"

_OBJECT = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
_STRING = {"type": "string"}
_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}

OBJECT_META_FIELDS: dict[str, tuple[dict[str, Any], str]] = {
    "name": (_STRING, "Name must be unique within a namespace."),
    "generateName": (_STRING, "Prefix the server uses to generate a unique name when name is empty."),
    "namespace": (_STRING, "Namespace defines the space within which each name must be unique."),
    "selfLink": (_STRING, "Deprecated; not set by the server."),
    "uid": (_STRING, "UID is the unique in time and space value for this object."),
    "resourceVersion": (_STRING, "An opaque value for optimistic concurrency and watches."),
    "generation": ({"type": "integer", "format": "int64"}, "A sequence number for the desired state."),
    "creationTimestamp": ({"type": "string", "format": "date-time"}, "When this object was created."),
    "deletionTimestamp": ({"type": "string", "format": "date-time"}, "When this object will be deleted."),
    "deletionGracePeriodSeconds": ({"type": "integer", "format": "int64"}, "Seconds allowed to terminate."),
    "labels": (_STRING_MAP, "Map of string keys and values to organize and select objects."),
    "annotations": (_STRING_MAP, "Unstructured key value map set by external tools."),
    "ownerReferences": ({"type": "array", "items": _OBJECT}, "Objects depended on by this object."),
    "finalizers": ({"type": "array", "items": _STRING}, "Must be empty before the object is deleted."),
    "managedFields": ({"type": "array", "items": _OBJECT}, "Which manager owns which fields."),
}

_SPEC = (_OBJECT, "Spec defines the desired state of the object.")
_STATUS = (_OBJECT, "Status is the most recently observed state of the object. Read-only.")

# The top-level fields of each kind besides apiVersion, kind and metadata.
TOP_LEVEL_FIELDS: dict[str, dict[str, tuple[dict[str, Any], str]]] = {
    "Namespace": {"spec": _SPEC, "status": _STATUS},
    "Node": {"spec": _SPEC, "status": _STATUS},
    "Pod": {"spec": _SPEC, "status": _STATUS},
    "ConfigMap": {
        "data": (_STRING_MAP, "Configuration data (UTF-8 values)."),
        "binaryData": (
            {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}},
            "Binary data.",
        ),
        "immutable": ({"type": "boolean"}, "If true, the data cannot be updated."),
    },
    "Event": {
        "action": (_STRING, "What action was taken or failed."),
        "count": ({"type": "integer", "format": "int32"}, "The number of times this event occurred."),
        "eventTime": ({"type": "string", "format": "date-time"}, "When this event was first observed."),
        "firstTimestamp": ({"type": "string", "format": "date-time"}, "When this event was first recorded."),
        "involvedObject": (_OBJECT, "The object this event is about."),
        "lastTimestamp": ({"type": "string", "format": "date-time"}, "When this event last occurred."),
        "message": (_STRING, "A human-readable description of the status of this operation."),
        "reason": (_STRING, "A short, machine understandable string for the transition."),
        "related": (_OBJECT, "An optional secondary object."),
        "reportingComponent": (_STRING, "The controller that emitted this event."),
        "reportingInstance": (_STRING, "The ID of the controller instance."),
        "series": (_OBJECT, "Data about the event series this event represents."),
        "source": (_OBJECT, "The component reporting this event."),
        "type": (_STRING, "Type of this event (Normal, Warning)."),
    },
    "Service": {"spec": _SPEC, "status": _STATUS},
    "Lease": {"spec": _SPEC},
    "CSIDriver": {"spec": _SPEC},
    "CSINode": {"spec": _SPEC},
    "RuntimeClass": {
        "handler": (_STRING, "The name of the CRI configuration that runs this class's pods."),
        "overhead": (_OBJECT, "Resources a pod of this class uses besides its containers."),
        "scheduling": (_OBJECT, "Which nodes support this class (node selector, tolerations)."),
    },
    "DeviceClass": {"spec": _SPEC},
    "ResourceClaim": {"spec": _SPEC, "status": _STATUS},
    "ResourceClaimTemplate": {"spec": _SPEC},
    "ResourceSlice": {"spec": _SPEC},
}

_TYPE_META_FIELDS = {
    "apiVersion": (_STRING, "The versioned schema of this representation of an object."),
    "kind": (_STRING, "The REST resource this object represents."),
}

_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json", "application/apply-patch+yaml")


def _package(rt: ResourceType) -> str:
    return "core" if not rt.group else rt.group.removesuffix(".k8s.io")


def schema_name(rt: ResourceType, version: str, kind: str = "") -> str:
    return f"io.k8s.api.{_package(rt)}.{version}.{kind or rt.kind}"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _properties(fields: dict[str, tuple[dict[str, Any], str]]) -> dict[str, Any]:
    return {name: {**schema, "description": description} for name, (schema, description) in fields.items()}


def _gvk(rt: ResourceType, version: str, kind: str = "") -> dict[str, str]:
    return {"group": rt.group, "version": version, "kind": kind or rt.kind}


def _kind_schemas(rt: ResourceType, version: str) -> dict[str, Any]:
    name, list_name = schema_name(rt, version), schema_name(rt, version, rt.list_kind)
    properties = {
        **_properties(_TYPE_META_FIELDS),
        "metadata": {"allOf": [_ref(f"{META}.ObjectMeta")], "description": "Standard object's metadata."},
        **_properties(TOP_LEVEL_FIELDS[rt.kind]),
    }
    return {
        name: {
            "description": f"{rt.kind} ({rt.api_version(version)}).",
            "type": "object",
            "properties": properties,
            "x-kubernetes-group-version-kind": [_gvk(rt, version)],
        },
        list_name: {
            "description": f"A list of {rt.kind} objects.",
            "type": "object",
            "required": ["items"],
            "properties": {
                **_properties(_TYPE_META_FIELDS),
                "metadata": {"allOf": [_ref(f"{META}.ListMeta")], "description": "Standard list metadata."},
                "items": {"type": "array", "items": {"allOf": [_ref(name)], "default": {}}},
            },
            "x-kubernetes-group-version-kind": [_gvk(rt, version, rt.list_kind)],
        },
    }


def _meta_schemas() -> dict[str, Any]:
    return {
        f"{META}.ObjectMeta": {
            "description": "Metadata that all persisted resources must have.",
            "type": "object",
            "properties": _properties(OBJECT_META_FIELDS),
        },
        f"{META}.ListMeta": {
            "description": "Metadata of lists.",
            "type": "object",
            "properties": {
                "continue": {"type": "string"},
                "remainingItemCount": {"type": "integer", "format": "int64"},
                "resourceVersion": {"type": "string"},
            },
        },
        f"{META}.Status": {"description": "The result of an operation that does not return an object.", **_OBJECT},
        f"{META}.DeleteOptions": {"description": "Options for a delete.", **_OBJECT},
        f"{META}.Patch": {"description": "A patch document of one of the accepted patch types.", "type": "object"},
        f"{META}.WatchEvent": {"description": "One event of a watch stream.", **_OBJECT},
    }


def _query(name: str, schema_type: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "description": description,
        "schema": {"type": schema_type, "uniqueItems": True},
    }


_DRY_RUN = _query("dryRun", "string", "When present (All), modifications are not persisted.")
_FIELD_MANAGER = _query("fieldManager", "string", "A name associated with the actor making these changes.")
_FIELD_VALIDATION = _query("fieldValidation", "string", "Ignore, Warn (default) or Strict handling of unknown fields.")
_LIST_PARAMETERS = [
    _query("allowWatchBookmarks", "boolean", "Request BOOKMARK events on watches."),
    _query("continue", "string", "The continue token of the previous page."),
    _query("fieldSelector", "string", "Restrict the returned objects by their fields."),
    _query("labelSelector", "string", "Restrict the returned objects by their labels."),
    _query("limit", "integer", "The maximum number of objects to return."),
    _query("resourceVersion", "string", "Where a list or watch starts."),
    _query("resourceVersionMatch", "string", "How resourceVersion applies to a list."),
    _query("sendInitialEvents", "boolean", "Start a watch with synthetic ADDED events for existing objects."),
    _query("timeoutSeconds", "integer", "How long a list or watch may take."),
    _query("watch", "boolean", "Watch for changes instead of listing."),
]
_DELETE_PARAMETERS = [
    _DRY_RUN,
    _query("gracePeriodSeconds", "integer", "Seconds before the object is deleted."),
    _query("propagationPolicy", "string", "Orphan, Background or Foreground garbage collection."),
]


def _content(schema_ref: str) -> dict[str, Any]:
    return {"application/json": {"schema": _ref(schema_ref)}, "application/yaml": {"schema": _ref(schema_ref)}}


def _operation(
    rt: ResourceType,
    version: str,
    action: str,
    operation_id: str,
    response: str,
    parameters: list[dict[str, Any]],
    body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "description": f"{action} {rt.kind}",
        "operationId": operation_id,
        "parameters": parameters,
        "responses": {
            "200": {"description": "OK", "content": _content(response)},
            "401": {"description": "Unauthorized"},
        },
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(rt, version),
    }
    if body is not None:
        operation["requestBody"] = {"content": body, "required": True}
    return operation


def _path_parameter(name: str) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string", "uniqueItems": True}}


def _paths(rt: ResourceType, version: str) -> dict[str, Any]:
    prefix = f"/apis/{rt.group}/{version}" if rt.group else f"/api/{version}"
    base = f"{prefix}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{prefix}/{rt.plural}"
    scope_params = [_path_parameter("namespace")] if rt.namespaced else []
    suffix = f"{'Namespaced' if rt.namespaced else ''}{rt.kind}"
    obj, list_name = schema_name(rt, version), schema_name(rt, version, rt.list_kind)
    write_params = [_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION]
    paths: dict[str, Any] = {
        base: {
            "get": _operation(rt, version, "list", f"list{suffix}", list_name, _LIST_PARAMETERS),
            "post": _operation(rt, version, "post", f"create{suffix}", obj, write_params, _content(obj)),
            "delete": _operation(
                rt,
                version,
                "deletecollection",
                f"deleteCollection{suffix}",
                f"{META}.Status",
                [*_DELETE_PARAMETERS, *_LIST_PARAMETERS],
                _content(f"{META}.DeleteOptions"),
            ),
            "parameters": scope_params,
        },
    }
    patch_body = {media: {"schema": _ref(f"{META}.Patch")} for media in _PATCH_TYPES}
    patch_params = [*write_params, _query("force", "boolean", "Force apply requests to take over conflicts.")]
    item_suffixes = [("", suffix), *((f"/{sub}", f"{suffix}{sub.capitalize()}") for sub in rt.subresources)]
    for path_suffix, op_suffix in item_suffixes:
        item: dict[str, Any] = {
            "get": _operation(rt, version, "get", f"read{op_suffix}", obj, []),
            "put": _operation(rt, version, "put", f"replace{op_suffix}", obj, write_params, _content(obj)),
            "patch": _operation(rt, version, "patch", f"patch{op_suffix}", obj, patch_params, patch_body),
            "parameters": [_path_parameter("name"), *scope_params],
        }
        if not path_suffix:
            item["delete"] = _operation(
                rt, version, "delete", f"delete{op_suffix}", obj, _DELETE_PARAMETERS, _content(f"{META}.DeleteOptions")
            )
        paths[f"{base}/{{name}}{path_suffix}"] = item
    if rt.namespaced:
        paths[f"{prefix}/{rt.plural}"] = {
            "get": _operation(rt, version, "list", f"list{rt.kind}ForAllNamespaces", list_name, _LIST_PARAMETERS),
        }
    return paths


def _document_key(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


@functools.cache
def _documents(server_version: str) -> dict[str, bytes]:
    documents: dict[str, bytes] = {}
    for group, versions in groups().items():
        for version in versions:
            served = [rt for rt in RESOURCES if rt.group == group and version in rt.versions]
            schemas = _meta_schemas()
            paths: dict[str, Any] = {}
            for rt in served:
                schemas.update(_kind_schemas(rt, version))
                paths.update(_paths(rt, version))
            document = {
                "openapi": OPENAPI_VERSION,
                "info": {"title": OPENAPI_TITLE, "version": server_version},
                "paths": paths,
                "components": {"schemas": schemas},
            }
            documents[_document_key(group, version)] = json.dumps(document, separators=(",", ":")).encode()
    return documents


def index(server_version: str) -> dict[str, Any]:
    """``/openapi/v3``: each group-version document's URL, with a content hash as kube-apiserver gives."""
    return {
        "paths": {
            key: {"serverRelativeURL": f"/openapi/v3/{key}?hash={hashlib.sha512(body).hexdigest().upper()}"}
            for key, body in _documents(server_version).items()
        }
    }


def document(server_version: str, key: str) -> bytes | None:
    """The encoded document for ``api/v1`` or ``apis/<group>/<version>``; None when not served."""
    return _documents(server_version).get(key)
