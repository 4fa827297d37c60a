"""Kubernetes protobuf request bodies, for the kinds kubectl sends that way.

kubectl 1.32's typed clients encode request bodies as ``application/vnd.kubernetes.protobuf``,
so ``kubectl create namespace`` and ``kubectl create configmap`` POST protobuf (everything that
goes through manifests, ``get``, ``apply``, ``patch`` and ``delete`` is JSON). This reads the
envelope (``k8s\\x00`` + runtime.Unknown) and those kinds into the JSON documents the rest of the
server handles; other kinds get 415 and a hint to send JSON, which every client can.
Go-style empty values (proto2 strings are always on the wire) are dropped, as JSON's omitempty does.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Iterator
from typing import Any

import attrs

from kubelet_dra.apiserver.status import ApiError

MAGIC = b"k8s\x00"
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5


@attrs.frozen
class Field:
    """One protobuf field: its JSON name, how to read it and, for messages, which message it holds."""

    name: str
    kind: str  # string, int, bool, time, message, messages, strings, string_map, bytes_map
    message: str = ""


SCHEMAS: dict[str, dict[int, Field]] = {
    "Unknown": {1: Field("typeMeta", "message", "TypeMeta"), 2: Field("raw", "raw")},
    "TypeMeta": {1: Field("apiVersion", "string"), 2: Field("kind", "string")},
    "ObjectMeta": {
        1: Field("name", "string"),
        2: Field("generateName", "string"),
        3: Field("namespace", "string"),
        5: Field("uid", "string"),
        6: Field("resourceVersion", "string"),
        7: Field("generation", "int"),
        8: Field("creationTimestamp", "time"),
        11: Field("labels", "string_map"),
        12: Field("annotations", "string_map"),
        13: Field("ownerReferences", "messages", "OwnerReference"),
        14: Field("finalizers", "strings"),
    },
    "OwnerReference": {
        1: Field("kind", "string"),
        3: Field("name", "string"),
        4: Field("uid", "string"),
        5: Field("apiVersion", "string"),
        6: Field("controller", "bool"),
        7: Field("blockOwnerDeletion", "bool"),
    },
    "Time": {1: Field("seconds", "int"), 2: Field("nanos", "int")},
    "Namespace": {
        1: Field("metadata", "message", "ObjectMeta"),
        2: Field("spec", "message", "NamespaceSpec"),
        3: Field("status", "message", "NamespaceStatus"),
    },
    "NamespaceSpec": {1: Field("finalizers", "strings")},
    "NamespaceStatus": {1: Field("phase", "string")},
    "ConfigMap": {
        1: Field("metadata", "message", "ObjectMeta"),
        2: Field("data", "string_map"),
        3: Field("binaryData", "bytes_map"),
        4: Field("immutable", "bool"),
    },
}
DECODABLE_KINDS = ("Namespace", "ConfigMap")


def unsupported(kind: str) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - protobuf is accepted for {', '.join(DECODABLE_KINDS)}"
        f" only, not {kind or 'this object'}; accepted media types include: application/json, application/yaml",
    )


def decode(body: bytes) -> dict[str, Any]:
    """A protobuf-encoded object as its JSON document; 415 for kinds we cannot read, 400 when malformed."""
    if not body.startswith(MAGIC):
        raise ApiError(400, "BadRequest", "the protobuf body does not start with the Kubernetes magic number")
    try:
        envelope = _message("Unknown", body[len(MAGIC) :])
        type_meta = envelope.get("typeMeta", {})
        kind = type_meta.get("kind", "")
        if kind not in DECODABLE_KINDS:
            raise unsupported(kind)
        return {**type_meta, **_message(kind, envelope.get("raw", b""))}
    except (IndexError, UnicodeDecodeError, ValueError) as err:
        raise ApiError(400, "BadRequest", f"the protobuf body is malformed: {err}") from err


def _message(name: str, data: bytes) -> dict[str, Any]:
    schema = SCHEMAS[name]
    result: dict[str, Any] = {}
    for number, value in _fields(data):
        field = schema.get(number)
        if field is not None:
            _set(result, field, value)
    return {key: value for key, value in result.items() if value not in ("", 0, {}, [], None) or value is False}


def _set(result: dict[str, Any], field: Field, value: int | bytes) -> None:
    scalar = field.kind in ("int", "bool")
    if isinstance(value, int) != scalar:
        raise ValueError(f"field {field.name} has the wrong wire type")
    if isinstance(value, int):
        result[field.name] = _signed(value) if field.kind == "int" else bool(value)
    elif field.kind == "raw":
        result[field.name] = value
    elif field.kind == "string":
        result[field.name] = value.decode()
    elif field.kind == "strings":
        result.setdefault(field.name, []).append(value.decode())
    elif field.kind == "message":
        result[field.name] = _message(field.message, value)
    elif field.kind == "messages":
        result.setdefault(field.name, []).append(_message(field.message, value))
    elif field.kind == "time":
        result[field.name] = _time(_message("Time", value))
    else:
        entry = dict(_fields(value))
        key, item = entry.get(1, b""), entry.get(2, b"")
        if not isinstance(key, bytes) or not isinstance(item, bytes):
            raise ValueError(f"field {field.name} has a malformed map entry")
        text = item.decode() if field.kind == "string_map" else base64.b64encode(item).decode()
        result.setdefault(field.name, {})[key.decode()] = text


def _time(value: dict[str, Any]) -> str | None:
    seconds = value.get("seconds", 0)
    if not seconds:
        return None
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) pairs: ints for varint/fixed fields, bytes for length-delimited ones."""
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == _VARINT:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == _BYTES:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise ValueError("truncated field")
            yield number, data[pos : pos + length]
            pos += length
        elif wire in (_FIXED64, _FIXED32):
            size = 8 if wire == _FIXED64 else 4
            yield number, int.from_bytes(data[pos : pos + size], "little")
            pos += size
        else:
            raise ValueError(f"unsupported wire type {wire}")
