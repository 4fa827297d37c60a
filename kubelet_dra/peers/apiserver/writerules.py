"""What a create or update keeps, checks and refuses, as kube-apiserver's generic registry does.

An update keeps the fields of metadata only the server sets, and for kinds with a status
subresource the stored status (a status update changes only status); ``metadata.uid`` and
``resourceVersion`` in a body are preconditions (409 Conflict); an object being deleted takes no
new finalizers; an update that changes nothing is no write at all.
"""

from __future__ import annotations

import random
from typing import Any

from kubelet_dra.peers.apiserver import documents, status
from kubelet_dra.peers.apiserver.objectmap import Table, key, shallow_copy
from kubelet_dra.peers.apiserver.resources import ResourceType

GENERATE_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
GENERATE_NAME_LENGTH = 5
_GENERATE_NAME_ATTEMPTS = 8
OPTIMISTIC_LOCK_MESSAGE = "the object has been modified; please apply your changes to the latest version and try again"
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
STATUS_ON_CREATE = frozenset({("", "Node")})


def metadata_of(obj: dict[str, Any]) -> dict[str, Any]:
    metadata = obj.get("metadata")
    if metadata is None:
        metadata = obj["metadata"] = {}
    if not isinstance(metadata, dict):
        raise status.bad_request("metadata must be an object")
    return metadata


def namespace_of(rt: ResourceType, namespace: str | None, metadata: dict[str, Any]) -> str:
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


def check_update_preconditions(rt: ResourceType, old: dict[str, Any], uid: str | None, rv: str | None) -> None:
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


def check_delete_preconditions(rt: ResourceType, obj: dict[str, Any], uid: str | None, rv: str | None) -> None:
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


def main_update(rt: ResourceType, old: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
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


def status_update(old: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The stored object with the client's status (and managedFields, which record who set it)."""
    new = shallow_copy(old)
    if "status" in body:
        new["status"] = body["status"]
    else:
        new.pop("status", None)
    if "managedFields" in body["metadata"]:
        new["metadata"]["managedFields"] = body["metadata"]["managedFields"]
    return new


def _spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata", "status")}


def same_spec(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return documents.same(_spec_part(old), _spec_part(new))


def _comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without what every write changes anyway: resourceVersion and managedFields timestamps."""
    metadata = {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}
    if "managedFields" in metadata:
        metadata["managedFields"] = [
            {k: v for k, v in entry.items() if k != "time"} for entry in metadata["managedFields"]
        ]
    return {**obj, "metadata": metadata}


def unchanged(old: dict[str, Any], new: dict[str, Any]) -> bool:
    return documents.same(_comparable(old), _comparable(new))


def check_new_finalizers(rt: ResourceType, old: dict[str, Any], new: dict[str, Any]) -> None:
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


def check_namespace_open(namespaces: Table, rt: ResourceType, namespace: str, name: str) -> None:
    """Namespaced objects need an existing namespace that is not terminating (404 / 403 otherwise)."""
    found = namespaces.objects.get(namespace)
    if found is None:
        raise status.not_found("namespaces", "", namespace)
    if found["metadata"].get("deletionTimestamp"):
        qualified = f"{rt.plural}.{rt.group}" if rt.group else rt.plural
        message = (
            f'{qualified} "{name}" is forbidden: unable to create new content in namespace {namespace} '
            "because it is being terminated"
        )
        raise status.forbidden(message, rt.plural, rt.group, name)


def generate_name(rng: random.Random, table: Table, namespace: str, prefix: str) -> str:
    """``prefix`` + 5 random characters from kube's alphabet, retried on collision like kube-apiserver."""
    name = prefix
    for _ in range(_GENERATE_NAME_ATTEMPTS):
        name = prefix + "".join(rng.choice(GENERATE_NAME_ALPHABET) for _ in range(GENERATE_NAME_LENGTH))
        if key(namespace, name) not in table.objects:
            return name
    raise status.already_exists(table.rt.plural, table.rt.group, name)
