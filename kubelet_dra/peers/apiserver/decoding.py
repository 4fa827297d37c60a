"""Every object the server is asked to store, decoded into its kind's type first, in kube-apiserver's words.

A request body (create, update) that does not decode is a 400 ``<Kind> in version "<v>" cannot be
handled as a <Kind>: ...``; a patch whose result does not decode a 422 on the field ``patch``; an
applied configuration that does not decode a 500 ``failed to create typed patch object``, as
kube-apiserver answers each. Unknown and duplicate fields follow ``fieldValidation``: refused
under Strict, warnings under Warn (the default), silent under Ignore. What passes holds only the
fields the kind has, so nothing is stored that cannot be served as JSON and as protobuf.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs

from kubelet_dra.peers.apiserver import status
from kubelet_dra.peers.apiserver.persistence import StoredObject, delete_fix
from kubelet_dra.peers.apiserver.resources import RESOURCES, ResourceType
from kubelet_dra.peers.apiserver.status import ApiError
from kubelet_dra.peers.errors import StateError
from kubelet_dra.peers.kubeproto.typed import TypedDecodeError, decode_typed


def _cannot_handle(rt: ResourceType, version: str, reason: str) -> str:
    return f'{rt.kind} in version "{version}" cannot be handled as a {rt.kind}: {reason}'


def field_warnings(rt: ResourceType, version: str, strict_errors: Sequence[str], directive: str) -> list[str]:
    """Unknown and duplicate fields under ``fieldValidation``: a 400 under Strict, warnings under Warn."""
    if not strict_errors or directive == "Ignore":
        return []
    if directive == "Strict":
        raise status.bad_request(_cannot_handle(rt, version, f"strict decoding error: {', '.join(strict_errors)}"))
    return list(strict_errors)


def decode_body(
    rt: ResourceType, version: str, document: dict[str, Any], directive: str
) -> tuple[dict[str, Any], list[str]]:
    """A create or update body as its kind holds it, and its field warnings; 400 when it does not decode."""
    try:
        decoded = decode_typed(document, rt.api_version(version), rt.kind)
    except TypedDecodeError as err:
        raise status.bad_request(_cannot_handle(rt, version, str(err))) from None
    return decoded.document, field_warnings(rt, version, decoded.strict_errors, directive)


@attrs.define
class PatchDecoding:
    """How one patch request decodes its result, and the field warnings it collects.

    A merge patch's unknown and duplicate fields are its body's (``body_strict_errors``, whose
    paths are the object's), a JSON patch's those of the patched object.
    """

    rt: ResourceType
    version: str
    directive: str = "Ignore"
    body_strict_errors: tuple[str, ...] | None = None
    warnings: list[str] = attrs.field(factory=list)

    def __call__(self, patched: dict[str, Any]) -> dict[str, Any]:
        try:
            decoded = decode_typed(patched, self.rt.api_version(self.version), self.rt.kind)
        except TypedDecodeError as err:
            raise _patch_invalid(patched, str(err)) from None
        strict = decoded.strict_errors if self.body_strict_errors is None else self.body_strict_errors
        if strict and self.directive == "Strict":
            raise _patch_invalid(patched, f"strict decoding error: {', '.join(strict)}")
        self.warnings[:] = strict if self.directive == "Warn" else ()
        return decoded.document


def body_strict_errors(rt: ResourceType, version: str, patch: Any) -> tuple[str, ...]:
    """The unknown and duplicate fields of a merge patch's body (directives aside); none if it does not decode."""
    if not isinstance(patch, dict):
        return ()
    try:
        decoded = decode_typed(patch, rt.api_version(version), rt.kind)
    except TypedDecodeError:
        return ()  # the patched object's decoding reports it
    return tuple(error for error in decoded.strict_errors if '"$' not in error and ".$" not in error)


def _patch_invalid(patched: dict[str, Any], reason: str) -> ApiError:
    text = json.dumps(patched, separators=(",", ":"), ensure_ascii=False)
    message = f"Invalid value: {json.dumps(text, ensure_ascii=False)}: {reason}"
    return status.invalid("", "", "", [{"reason": "FieldValueInvalid", "message": message, "field": "patch"}])


def decode_applied(rt: ResourceType, version: str, name: str, applied: dict[str, Any]) -> dict[str, Any]:
    """An applied configuration as its kind holds it; else a 500 as kube-apiserver's typed patch object."""
    where = f"failed to create typed patch object (/{name}; {rt.group}/{version}, Kind={rt.kind})"
    try:
        decoded = decode_typed(applied, rt.api_version(version), rt.kind, nulls=False)
    except TypedDecodeError as err:
        raise ApiError(500, "", f"{where}: {err}") from None
    unknown = [error for error in decoded.strict_errors if error.startswith("unknown field")]
    if unknown:
        field = unknown[0].removeprefix('unknown field "').removesuffix('"')
        raise ApiError(500, "", f"{where}: .{field}: field not declared in schema")
    return decoded.document


def check_stored(objects: Iterable[StoredObject], path: Path) -> None:
    """Refuse to serve a data directory holding objects that do not decode (a server before typed decoding
    stored them): each would break every Go client that lists its resource. StateError names each one."""
    served = {f"{rt.group}/{rt.plural}": rt for rt in RESOURCES}
    broken = []
    for stored in objects:
        rt = served.get(stored.resource)
        if rt is None:
            continue
        try:
            decode_typed(stored.object, rt.api_version(rt.storage_version), rt.kind)
        except TypedDecodeError as err:
            broken.append(f"  {stored.resource or 'core'} {stored.key}: {err}")
    if broken:
        raise StateError(
            f"{len(broken)} stored object(s) do not decode into their kind, and Go clients could not read them",
            where=str(path),
            fix=delete_fix(path),
            details="\n".join(broken),
        )
