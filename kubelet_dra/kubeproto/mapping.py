"""Kubernetes objects between their JSON documents and Kubernetes protobuf, for any served kind.

One generic walk over the message descriptors of ``proto/k8s`` does every kind: a field's proto
name is its JSON name, and the ``.proto`` files declare a scalar ``optional`` exactly when its zero
value is meaningful in JSON (a Go pointer, or no ``omitempty``), so presence on the wire decides
whether a zero survives. Two field options carry the rest of Go's JSON rules: ``inline`` marks a
message whose fields sit in its parent's JSON object (Go's ``json:",inline"``, e.g. a Volume's
source), ``nullable`` a field Go writes as null when empty (a list without omitempty, a time
without omitzero). The few types whose JSON
is not a plain object (Quantity, Time, MicroTime, Duration, IntOrString, RawExtension, FieldsV1)
have one conversion each, keyed by their full message name. JSON keys the message does not have
are dropped, as kube-apiserver's protobuf decoding drops what the Go type does not hold.

On the wire an object is ``k8s\\x00`` + ``runtime.Unknown`` (its apiVersion and kind, and the
object's own bytes); a watch stream is a sequence of frames, each a 4-byte big-endian length and
a bare ``meta.v1.WatchEvent`` whose object is such an envelope.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import functools
import json
import re
import struct
from collections.abc import Callable, Iterator
from typing import Any

from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError, Message

from kubelet_dra.kubeproto import (  # noqa: F401  (importing registers the descriptors)
    core_v1_pb2,
    intstr_pb2,
    meta_v1_pb2,
    options_pb2,
    resource_quantity_pb2,
    resource_v1_pb2,
    resource_v1beta1_pb2,
    resource_v1beta2_pb2,
    runtime_pb2,
)

MAGIC = b"k8s\x00"
META = "k8s.io.apimachinery.pkg.apis.meta.v1"
RUNTIME = "k8s.io.apimachinery.pkg.runtime"
# Kinds of meta.k8s.io that clients send or receive under any group's apiVersion.
META_KINDS = frozenset(
    {
        "Status",
        "DeleteOptions",
        "WatchEvent",
        "ListOptions",
        "GetOptions",
        "CreateOptions",
        "UpdateOptions",
        "PatchOptions",
        "PartialObjectMetadata",
        "PartialObjectMetadataList",
    }
)
_FRAME_LENGTH = struct.Struct(">I")


class ProtobufError(ValueError):
    """A protobuf body that cannot be read or a document that cannot be written; says where."""


def package_of(api_version: str) -> str:
    """The proto package of an ``apiVersion``: ``v1`` -> core/v1, ``resource.k8s.io/v1`` -> resource/v1."""
    group, _, version = api_version.rpartition("/")
    return f"k8s.io.api.{group.removesuffix('.k8s.io').replace('.', '') or 'core'}.{version}"


def message_class(api_version: str, kind: str) -> type[Message]:
    """The generated class of ``kind`` at ``api_version``; ProtobufError when we have no such type."""
    package = META if kind in META_KINDS else package_of(api_version)
    try:
        descriptor = descriptor_pool.Default().FindMessageTypeByName(f"{package}.{kind}")
    except KeyError:
        raise ProtobufError(f"no protobuf type for kind {kind!r} of {api_version!r}") from None
    return message_factory.GetMessageClass(descriptor)


# --- messages to JSON --------------------------------------------------------------------------


def to_json(message: Message) -> Any:
    """The JSON value of ``message``: an object of its set fields, or a special type's own form."""
    special = _SPECIAL_TO_JSON.get(message.DESCRIPTOR.full_name)
    if special is not None:
        return special(message)
    document: dict[str, Any] = {}
    for field, value in message.ListFields():
        if _is_inline(field):
            document.update(to_json(value))
            continue
        converted = _field_to_json(field, value)
        if converted is not None:
            document[field.name] = converted
    for field in _nullable_fields(message.DESCRIPTOR):
        document.setdefault(field.name, None)
    if _is_list(message.DESCRIPTOR) and not document.get("items"):
        document["items"] = []
    return document


def _field_to_json(field: FieldDescriptor, value: Any) -> Any:
    if _is_map(field):
        value_field = field.message_type.fields_by_name["value"]
        return {key: _single_to_json(value_field, item) for key, item in value.items()}
    if field.is_repeated:
        return [_single_to_json(field, item) for item in value]
    return _single_to_json(field, value)


def _single_to_json(field: FieldDescriptor, value: Any) -> Any:
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        return to_json(value)
    if field.type == FieldDescriptor.TYPE_BYTES:
        return base64.b64encode(value).decode()
    return value


def _is_map(field: FieldDescriptor) -> bool:
    return field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type.GetOptions().map_entry


@functools.cache
def _is_inline(field: FieldDescriptor) -> bool:
    return field.GetOptions().Extensions[options_pb2.inline]


@functools.cache
def _inline_fields(descriptor: Descriptor) -> tuple[FieldDescriptor, ...]:
    return tuple(field for field in descriptor.fields if _is_inline(field))


@functools.cache
def _nullable_fields(descriptor: Descriptor) -> tuple[FieldDescriptor, ...]:
    return tuple(field for field in descriptor.fields if field.GetOptions().Extensions[options_pb2.nullable])


def _is_list(descriptor: Descriptor) -> bool:
    return descriptor.name.endswith("List") and "items" in descriptor.fields_by_name


def _time_to_json(message: Message) -> str | None:
    if not message.seconds:
        return None
    moment = datetime.datetime.fromtimestamp(message.seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_time_to_json(message: Message) -> str | None:
    if not message.seconds and not message.nanos:
        return None
    moment = datetime.datetime.fromtimestamp(message.seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{message.nanos // 1000:06d}Z"


def _raw_to_json(raw: bytes, where: str) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError as err:
        raise ProtobufError(f"{where} does not hold JSON: {err}") from err


def _int_or_string_to_json(message: Message) -> int | str:
    return message.strVal if message.type == 1 else message.intVal


_SPECIAL_TO_JSON: dict[str, Callable[[Message], Any]] = {
    "k8s.io.apimachinery.pkg.api.resource.Quantity": lambda message: message.string,
    f"{META}.Time": _time_to_json,
    f"{META}.MicroTime": _micro_time_to_json,
    f"{META}.Duration": lambda message: go_duration(message.duration),
    f"{META}.FieldsV1": lambda message: _raw_to_json(message.Raw, "a FieldsV1"),
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": _int_or_string_to_json,
    f"{RUNTIME}.RawExtension": lambda message: _raw_to_json(message.raw, "a RawExtension"),
}


# --- JSON to messages --------------------------------------------------------------------------


def from_json(document: Any, message: Message, path: str = "") -> None:
    """Fill ``message`` from its JSON value; ProtobufError names the field path of a wrong value."""
    special = _SPECIAL_FROM_JSON.get(message.DESCRIPTOR.full_name)
    if special is not None:
        special(document, message, path)
        return
    if not isinstance(document, dict):
        raise ProtobufError(f"{path or 'the object'}: expected an object, got {_json_type(document)}")
    message.SetInParent()
    for inline in _inline_fields(message.DESCRIPTOR):
        from_json(document, getattr(message, inline.name), path)
    fields = message.DESCRIPTOR.fields_by_name
    for key, value in document.items():
        field = fields.get(key)
        if field is None or value is None or _is_inline(field):
            continue
        where = f"{path}.{key}" if path else key
        if _is_map(field):
            _map_from_json(value, message, field, where)
        elif field.is_repeated:
            _repeated_from_json(value, message, field, where)
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            from_json(value, getattr(message, key), where)
        else:
            setattr(message, key, _scalar(field, value, where))


def _map_from_json(value: Any, message: Message, field: FieldDescriptor, where: str) -> None:
    if not isinstance(value, dict):
        raise ProtobufError(f"{where}: expected an object, got {_json_type(value)}")
    target = getattr(message, field.name)
    value_field = field.message_type.fields_by_name["value"]
    for key, item in value.items():
        if value_field.type == FieldDescriptor.TYPE_MESSAGE:
            from_json(item, target[key], f"{where}[{key}]")
        else:
            target[key] = _scalar(value_field, item, f"{where}[{key}]")


def _repeated_from_json(value: Any, message: Message, field: FieldDescriptor, where: str) -> None:
    if not isinstance(value, list):
        raise ProtobufError(f"{where}: expected an array, got {_json_type(value)}")
    target = getattr(message, field.name)
    for index, item in enumerate(value):
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            from_json(item, target.add(), f"{where}[{index}]")
        else:
            target.append(_scalar(field, item, f"{where}[{index}]"))


_INT_TYPES = frozenset(
    {
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_FIXED32,
        FieldDescriptor.TYPE_FIXED64,
    }
)


def _scalar(field: FieldDescriptor, value: Any, where: str) -> Any:
    kind = field.type
    if kind == FieldDescriptor.TYPE_STRING and isinstance(value, str):
        return value
    if kind == FieldDescriptor.TYPE_BOOL and isinstance(value, bool):
        return value
    if kind in _INT_TYPES and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind in _INT_TYPES and isinstance(value, float) and value.is_integer():
        return int(value)
    if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT) and isinstance(value, int | float):
        return float(value)
    if kind == FieldDescriptor.TYPE_BYTES and isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except binascii.Error as err:
            raise ProtobufError(f"{where}: not valid base64: {err}") from err
    expected = {FieldDescriptor.TYPE_STRING: "a string", FieldDescriptor.TYPE_BOOL: "a boolean"}.get(
        kind, "a base64 string" if kind == FieldDescriptor.TYPE_BYTES else "a number"
    )
    raise ProtobufError(f"{where}: expected {expected}, got {_json_type(value)}")


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    return {dict: "an object", list: "an array"}.get(type(value), type(value).__name__)


def _quantity_from_json(value: Any, message: Message, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ProtobufError(f"{path}: a quantity must be a string or a number, got {_json_type(value)}")
    message.string = value if isinstance(value, str) else json.dumps(value)


def _parse_time(value: Any, path: str) -> datetime.datetime:
    if not isinstance(value, str):
        raise ProtobufError(f"{path}: a time must be an RFC 3339 string, got {_json_type(value)}")
    try:
        moment = datetime.datetime.fromisoformat(value)
    except ValueError as err:
        raise ProtobufError(f"{path}: {value!r} is not an RFC 3339 time") from err
    if moment.tzinfo is None:
        raise ProtobufError(f"{path}: {value!r} has no time zone (RFC 3339 needs one, e.g. Z)")
    return moment


def _time_from_json(value: Any, message: Message, path: str) -> None:
    message.SetInParent()
    message.seconds = int(_parse_time(value, path).timestamp())


def _micro_time_from_json(value: Any, message: Message, path: str) -> None:
    moment = _parse_time(value, path)
    message.SetInParent()
    message.seconds = int(moment.replace(microsecond=0).timestamp())
    message.nanos = moment.microsecond * 1000


def _duration_from_json(value: Any, message: Message, path: str) -> None:
    message.SetInParent()
    message.duration = parse_go_duration(value, path)


def _int_or_string_from_json(value: Any, message: Message, path: str) -> None:
    message.SetInParent()
    if isinstance(value, str):
        message.type = 1
        message.strVal = value
    elif isinstance(value, int) and not isinstance(value, bool):
        message.intVal = value
    else:
        raise ProtobufError(f"{path}: expected an integer or a string, got {_json_type(value)}")


def _raw_from_json(attribute: str) -> Callable[[Any, Message, str], None]:
    def fill(value: Any, message: Message, path: str) -> None:
        message.SetInParent()
        setattr(message, attribute, json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())

    return fill


_SPECIAL_FROM_JSON: dict[str, Callable[[Any, Message, str], None]] = {
    "k8s.io.apimachinery.pkg.api.resource.Quantity": _quantity_from_json,
    f"{META}.Time": _time_from_json,
    f"{META}.MicroTime": _micro_time_from_json,
    f"{META}.Duration": _duration_from_json,
    f"{META}.FieldsV1": _raw_from_json("Raw"),
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": _int_or_string_from_json,
    f"{RUNTIME}.RawExtension": _raw_from_json("raw"),
}


# --- Go durations ------------------------------------------------------------------------------

_DURATION_UNITS = (("h", 3_600_000_000_000), ("m", 60_000_000_000), ("s", 1_000_000_000))
_SMALL_UNITS = (("ms", 1_000_000), ("µs", 1_000), ("ns", 1))
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_NANOS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_UNIT_NANOS |= {"m": 60_000_000_000, "h": 3_600_000_000_000}


def go_duration(nanos: int) -> str:
    """A duration as Go's ``time.Duration.String`` writes it (``1h2m3.5s``, ``150ms``, ``0s``)."""
    if nanos == 0:
        return "0s"
    sign, nanos = ("-", -nanos) if nanos < 0 else ("", nanos)
    if nanos < 1_000_000_000:
        for unit, size in _SMALL_UNITS:
            if nanos >= size:
                return sign + _decimal(nanos, size) + unit
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = f"{hours}h" if hours else ""
    text += f"{minutes}m" if hours or minutes else ""
    return sign + text + _decimal(rest, 1_000_000_000) + "s"


def _decimal(value: int, unit: int) -> str:
    whole, fraction = divmod(value, unit)
    if not fraction:
        return str(whole)
    digits = str(fraction).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


def parse_go_duration(value: Any, path: str = "duration") -> int:
    """Nanoseconds of a Go duration string (``1h30m``, ``-1.5s``, ``0``)."""
    if not isinstance(value, str) or not value:
        raise ProtobufError(f"{path}: a duration must be a string such as '30s', got {_json_type(value)}")
    sign = -1 if value.startswith("-") else 1
    text = value[1:] if value[0] in "+-" else value
    if text == "0":
        return 0
    total, position = 0, 0
    for match in _DURATION_PART.finditer(text):
        if match.start() != position:
            break
        total += round(float(match[1]) * _UNIT_NANOS[match[2]])
        position = match.end()
    if position != len(text) or position == 0:
        raise ProtobufError(f"{path}: {value!r} is not a duration (examples: 30s, 1m30s, 250ms)")
    return sign * total


# --- envelopes and watch frames -----------------------------------------------------------------


def encode(document: dict[str, Any]) -> bytes:
    """A JSON document with ``apiVersion`` and ``kind`` as a Kubernetes protobuf body."""
    api_version, kind = document.get("apiVersion"), document.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str) or not kind:
        raise ProtobufError("the object has no apiVersion and kind, which a protobuf body must carry")
    message = message_class(api_version, kind)()
    from_json({key: value for key, value in document.items() if key not in ("apiVersion", "kind")}, message)
    unknown = runtime_pb2.Unknown()
    unknown.typeMeta.apiVersion = api_version
    unknown.typeMeta.kind = kind
    unknown.raw = message.SerializeToString(deterministic=True)
    return MAGIC + unknown.SerializeToString(deterministic=True)


def decode(data: bytes) -> dict[str, Any]:
    """A Kubernetes protobuf body as its JSON document (``apiVersion`` and ``kind`` first)."""
    if not data.startswith(MAGIC):
        raise ProtobufError("the body does not start with the Kubernetes protobuf magic number 'k8s\\x00'")
    unknown = runtime_pb2.Unknown()
    try:
        unknown.ParseFromString(data[len(MAGIC) :])
    except DecodeError as err:
        raise ProtobufError(f"the runtime.Unknown envelope is malformed: {err}") from err
    api_version, kind = unknown.typeMeta.apiVersion, unknown.typeMeta.kind
    if not kind:
        raise ProtobufError("the envelope names no kind (typeMeta.kind is empty)")
    message = message_class(api_version, kind)()
    try:
        message.ParseFromString(unknown.raw)
    except DecodeError as err:
        raise ProtobufError(f"the {kind} in the body is malformed: {err}") from err
    return {"kind": kind, "apiVersion": api_version, **to_json(message)}


def encode_watch_event(event_type: str, document: dict[str, Any]) -> bytes:
    """One ``;stream=watch`` frame: length, then a WatchEvent whose object is ``document``'s envelope."""
    event = meta_v1_pb2.WatchEvent()
    event.type = event_type
    event.object.raw = encode(document)
    payload = event.SerializeToString(deterministic=True)
    return _FRAME_LENGTH.pack(len(payload)) + payload


def decode_watch_frames(stream: bytes) -> list[dict[str, Any]]:
    """Every event of a protobuf watch stream as ``{"type", "object"}``; ProtobufError on a cut frame."""
    return list(_watch_events(stream))


def _watch_events(stream: bytes) -> Iterator[dict[str, Any]]:
    offset = 0
    while offset < len(stream):
        if offset + _FRAME_LENGTH.size > len(stream):
            raise ProtobufError(f"the watch stream ends inside a frame header at byte {offset}")
        (length,) = _FRAME_LENGTH.unpack_from(stream, offset)
        offset += _FRAME_LENGTH.size
        if offset + length > len(stream):
            raise ProtobufError(f"the watch stream's frame at byte {offset} is cut short")
        event = meta_v1_pb2.WatchEvent()
        try:
            event.ParseFromString(stream[offset : offset + length])
        except DecodeError as err:
            raise ProtobufError(f"the watch event at byte {offset} is malformed: {err}") from err
        offset += length
        yield {"type": event.type, "object": decode(event.object.raw)}
