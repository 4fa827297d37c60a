"""Kubernetes objects between their JSON documents and Kubernetes protobuf, for any served kind.

One generic walk over the message descriptors of ``proto/k8s`` (``schema``) does every kind: the
``.proto`` files declare a scalar ``optional`` exactly when its zero value is meaningful in JSON
(a Go pointer, or no ``omitempty``), so presence on the wire decides whether a zero survives. The
few types whose JSON is not a plain object (Quantity, Time, MicroTime, Duration, IntOrString,
RawExtension, FieldsV1) have one conversion each, keyed by their full message name. JSON keys the
message does not have are dropped, as kube-apiserver's protobuf decoding drops what the Go type
does not hold.

On the wire an object is ``k8s\\x00`` + ``runtime.Unknown`` (its apiVersion and kind, and the
object's own bytes); a watch stream is a sequence of frames, each a 4-byte big-endian length and
a bare ``meta.v1.WatchEvent`` whose object is such an envelope.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
import struct
from collections.abc import Callable, Iterator
from typing import Any

from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import DecodeError, Message

from kubelet_dra.peers.gotext import go_duration
from kubelet_dra.peers.kubeproto import meta_v1_pb2, runtime_pb2
from kubelet_dra.peers.kubeproto.durations import parse_go_duration
from kubelet_dra.peers.kubeproto.schema import (
    INT_OR_STRING,
    INT_TYPES,
    META,
    QUANTITY,
    RUNTIME,
    ProtobufError,
    inline_fields,
    is_inline,
    is_list,
    is_map,
    json_type,
    message_class,
    nullable_fields,
)

__all__ = ["ProtobufError", "decode", "decode_watch_frames", "encode", "encode_watch_event", "message_class"]

MAGIC = b"k8s\x00"
_FRAME_LENGTH = struct.Struct(">I")


# --- messages to JSON --------------------------------------------------------------------------


def to_json(message: Message) -> Any:
    """The JSON value of ``message``: an object of its set fields, or a special type's own form."""
    special = _SPECIAL_TO_JSON.get(message.DESCRIPTOR.full_name)
    if special is not None:
        return special(message)
    document: dict[str, Any] = {}
    for field, value in message.ListFields():
        if is_inline(field):
            document.update(to_json(value))
            continue
        converted = _field_to_json(field, value)
        if converted is not None:
            document[field.name] = converted
    for field in nullable_fields(message.DESCRIPTOR):
        document.setdefault(field.name, None)
    if is_list(message.DESCRIPTOR) and not document.get("items"):
        document["items"] = []
    return document


def _field_to_json(field: FieldDescriptor, value: Any) -> Any:
    if is_map(field):
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


def _time_to_json(message: Message) -> str | None:
    if not message.seconds:
        return None
    return _utc(message.seconds).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_time_to_json(message: Message) -> str | None:
    if not message.seconds and not message.nanos:
        return None
    return _utc(message.seconds).strftime("%Y-%m-%dT%H:%M:%S.") + f"{message.nanos // 1000:06d}Z"


def _utc(seconds: int) -> datetime.datetime:
    """The moment ``seconds`` after the epoch; ProtobufError beyond the years RFC 3339 can write (1 to 9999)."""
    try:
        return datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    except (OverflowError, OSError, ValueError):
        raise ProtobufError(f"a time {seconds} seconds from 1970 is outside the years 1 to 9999") from None


def _raw_to_json(raw: bytes, where: str) -> Any:
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError as err:
        raise ProtobufError(f"{where} does not hold JSON: {err}") from err
    except RecursionError:
        raise ProtobufError(f"{where} holds JSON nested too deep to read") from None


def _int_or_string_to_json(message: Message) -> int | str:
    return message.strVal if message.type == 1 else message.intVal


_SPECIAL_TO_JSON: dict[str, Callable[[Message], Any]] = {
    QUANTITY: lambda message: message.string,
    f"{META}.Time": _time_to_json,
    f"{META}.MicroTime": _micro_time_to_json,
    f"{META}.Duration": lambda message: go_duration(message.duration),
    f"{META}.FieldsV1": lambda message: _raw_to_json(message.Raw, "a FieldsV1"),
    INT_OR_STRING: _int_or_string_to_json,
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
        raise ProtobufError(f"{path or 'the object'}: expected an object, got {json_type(document)}")
    message.SetInParent()
    for inline in inline_fields(message.DESCRIPTOR):
        from_json(document, getattr(message, inline.name), path)
    fields = message.DESCRIPTOR.fields_by_name
    for key, value in document.items():
        field = fields.get(key)
        if field is None or value is None or is_inline(field):
            continue
        where = f"{path}.{key}" if path else key
        if is_map(field):
            _map_from_json(value, message, field, where)
        elif field.is_repeated:
            _repeated_from_json(value, message, field, where)
        elif field.type == FieldDescriptor.TYPE_MESSAGE:
            from_json(value, getattr(message, key), where)
        else:
            setattr(message, key, _scalar(field, value, where))


def _map_from_json(value: Any, message: Message, field: FieldDescriptor, where: str) -> None:
    if not isinstance(value, dict):
        raise ProtobufError(f"{where}: expected an object, got {json_type(value)}")
    target = getattr(message, field.name)
    value_field = field.message_type.fields_by_name["value"]
    for key, item in value.items():
        if value_field.type == FieldDescriptor.TYPE_MESSAGE:
            from_json(item, target[key], f"{where}[{key}]")
        else:
            target[key] = _scalar(value_field, item, f"{where}[{key}]")


def _repeated_from_json(value: Any, message: Message, field: FieldDescriptor, where: str) -> None:
    if not isinstance(value, list):
        raise ProtobufError(f"{where}: expected an array, got {json_type(value)}")
    target = getattr(message, field.name)
    for index, item in enumerate(value):
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            from_json(item, target.add(), f"{where}[{index}]")
        else:
            target.append(_scalar(field, item, f"{where}[{index}]"))


def _scalar(field: FieldDescriptor, value: Any, where: str) -> Any:
    kind = field.type
    if kind == FieldDescriptor.TYPE_STRING and isinstance(value, str):
        return value
    if kind == FieldDescriptor.TYPE_BOOL and isinstance(value, bool):
        return value
    if kind in INT_TYPES and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind in INT_TYPES and isinstance(value, float) and value.is_integer():
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
    raise ProtobufError(f"{where}: expected {expected}, got {json_type(value)}")


def _quantity_from_json(value: Any, message: Message, path: str) -> None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ProtobufError(f"{path}: a quantity must be a string or a number, got {json_type(value)}")
    message.string = value if isinstance(value, str) else json.dumps(value)


def _parse_time(value: Any, path: str) -> datetime.datetime:
    if not isinstance(value, str):
        raise ProtobufError(f"{path}: a time must be an RFC 3339 string, got {json_type(value)}")
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
        raise ProtobufError(f"{path}: expected an integer or a string, got {json_type(value)}")


def _raw_from_json(attribute: str) -> Callable[[Any, Message, str], None]:
    def fill(value: Any, message: Message, path: str) -> None:
        message.SetInParent()
        setattr(message, attribute, json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())

    return fill


_SPECIAL_FROM_JSON: dict[str, Callable[[Any, Message, str], None]] = {
    QUANTITY: _quantity_from_json,
    f"{META}.Time": _time_from_json,
    f"{META}.MicroTime": _micro_time_from_json,
    f"{META}.Duration": _duration_from_json,
    f"{META}.FieldsV1": _raw_from_json("Raw"),
    INT_OR_STRING: _int_or_string_from_json,
    f"{RUNTIME}.RawExtension": _raw_from_json("raw"),
}


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
