"""Typed decoding: a JSON document read into its kind's schema the way kube-apiserver's Go decoder reads it.

kube-apiserver never stores what it could not decode into the kind's Go type: a value of the
wrong JSON type, a non-integer or out-of-range number for an integer, a bad quantity or time is
a 400 before defaulting and validation run. The message descriptors of ``proto/k8s`` hold the
same types, so one walk over them decodes every kind and version the server serves.

Go's rules kept here: a type mismatch is remembered and decoding goes on, the first one is
reported (``json: cannot unmarshal <what> into Go struct field <Struct>.<path> of type <type>``,
the path without list indexes or map keys); a special type's own parser (Quantity, Time, ...)
stops decoding at once and its error wins. ``null`` leaves a field unset and a list item or map
value at its zero value; an empty list or map unless it is nullable, and a zero scalar unless it
is ``optional``, are dropped, as Go's ``omitempty`` drops them. Unknown and duplicate fields are
the strict errors ``fieldValidation`` turns into warnings or a refusal; unknown fields are
dropped, as the Go type cannot hold them.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import attrs
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from kubelet_dra.peers.kubeproto import durations, goscalars
from kubelet_dra.peers.kubeproto.jsontext import FloatLiteral, SeenTwice
from kubelet_dra.peers.kubeproto.schema import (
    INT_OR_STRING,
    INT_TYPES,
    META,
    QUANTITY,
    RUNTIME,
    ProtobufError,
    descriptor_of,
    is_inline,
    is_map,
    nullable_fields,
)

_TYPE_META = ("apiVersion", "kind")
_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1, "int32"),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1, "int32"),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1, "uint32"),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1, "uint32"),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1, "uint64"),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1, "uint64"),
}
_INT64 = (-(2**63), 2**63 - 1, "int64")
_SCALAR_NAMES = {
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_BYTES: "[]uint8",
    FieldDescriptor.TYPE_DOUBLE: "float64",
    FieldDescriptor.TYPE_FLOAT: "float32",
}


class TypedDecodeError(ProtobufError):
    """The document does not decode into its kind; ``str()`` is Go's message."""


@attrs.frozen
class Decoded:
    """A document as its Go type holds it, and the strict errors (unknown, duplicate fields) in text order."""

    document: dict[str, Any]
    strict_errors: tuple[str, ...]


def decode_typed(document: dict[str, Any], api_version: str, kind: str, *, nulls: bool = True) -> Decoded:
    """``document`` decoded into ``kind`` at ``api_version``; TypedDecodeError with Go's message when it cannot be.

    With ``nulls``, an unset nullable field is written ``null``, as Go marshals the decoded object (an object to
    store); without, the document keeps only what it set (an applied configuration, whose fields are owned).
    """
    walk = _Walk(nulls)
    try:
        decoded = walk.object(document, descriptor_of(api_version, kind), None, None, top=True)
    except _Abort as abort:
        raise TypedDecodeError(str(abort)) from None
    if walk.saved is not None:
        raise TypedDecodeError(walk.saved)
    return Decoded(decoded, tuple(walk.strict))


class _Abort(Exception):
    """A special type's parser failed: Go stops decoding there and reports this."""


@functools.cache
def _fields(descriptor: Descriptor) -> dict[str, _Field]:
    """JSON name -> the field, inline messages flattened."""
    fields: dict[str, _Field] = {}
    nullable = set(nullable_fields(descriptor))
    for field in descriptor.fields:
        if is_inline(field):
            embedded = field.message_type.name
            for name, inner in _fields(field.message_type).items():
                fields.setdefault(name, attrs.evolve(inner, embedded=(embedded, *inner.embedded)))
        else:
            scalar = field.type != FieldDescriptor.TYPE_MESSAGE and not field.is_repeated
            plain = scalar and field.type == FieldDescriptor.TYPE_STRING
            omit_empty = (field.is_repeated and field not in nullable) or (scalar and not field.has_presence)
            fields[field.name] = _Field(field, (), plain, omit_empty, field in nullable)
    return fields


@attrs.frozen
class _Field:
    """A field as the walk needs it: its descriptor, the Go names of the embedded structs it sits in, whether it
    is one plain string, whether Go's ``omitempty`` drops it when empty (a list or map that is not nullable,
    a scalar the ``.proto`` does not declare ``optional``: a zero ``""``, ``0``, ``false``), and whether Go
    writes it as ``null`` when unset (a nullable field: kube-apiserver's JSON has ``"topologyKeys": null``)."""

    descriptor: FieldDescriptor
    embedded: tuple[str, ...]
    plain_string: bool
    omit_empty: bool
    null_when_unset: bool


def go_type(field: FieldDescriptor, *, element: bool = False) -> str:
    """The Go type name a field's error names: ``string``, ``[]v1.Device``, ``map[string]string``."""
    if is_map(field) and not element:
        return f"map[string]{go_type(field.message_type.fields_by_name['value'], element=True)}"
    if field.is_repeated and not element:
        return f"[]{go_type(field, element=True)}"
    if field.type == FieldDescriptor.TYPE_MESSAGE:
        package = field.message_type.file.package
        return f"{package.rsplit('.', 1)[-1]}.{field.message_type.name}"
    if field.type in INT_TYPES:
        return _INT_RANGES.get(field.type, _INT64)[2]
    return _SCALAR_NAMES[field.type]


def _what(value: Any, *, numeric: bool = False) -> str:
    """How Go names the JSON value it could not store; numbers with their text when the target is numeric."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return f"number {_number_text(value)}" if numeric else "number"
    return {str: "string", dict: "object", list: "array"}.get(type(value), "value")


def _number_text(value: float) -> str:
    if isinstance(value, FloatLiteral):
        return value.text
    if isinstance(value, float) and value.is_integer() and math.isfinite(value):
        return str(int(value))
    return repr(value)


Where = tuple[Any, str | int] | None
"""A JSON path, built only when an error names it: (parent, field name or list index), None at the top."""
GoPath = tuple[Any, tuple[str, ...], str] | None
"""The path Go names in a type error: (parent, embedded struct names, field name); no indexes, no map keys."""


def _json_path(where: Where) -> str:
    parts: list[str] = []
    while where is not None:
        where, segment = where
        parts.append(f"[{segment}]" if isinstance(segment, int) else f".{segment}")
    return "".join(reversed(parts)).removeprefix(".")


def _go_path(where: GoPath) -> str:
    parts: list[str] = []
    while where is not None:
        where, embedded, name = where
        parts.extend((name, *reversed(embedded)))
    return ".".join(reversed(parts))


class _Walk:
    """One decoding: the first type mismatch seen and the strict errors, as Go's decoder keeps them."""

    def __init__(self, nulls: bool) -> None:
        self.nulls = nulls
        self.saved: str | None = None
        self.strict: list[str] = []

    def mismatch(self, value: Any, struct: str, go_path: GoPath, type_name: str, numeric: bool = False) -> None:
        if self.saved is None:
            self.saved = _mismatch(_what(value, numeric=numeric), struct, go_path, type_name)

    def object(
        self, value: dict[str, Any], descriptor: Descriptor, go_path: GoPath, path: Where, top: bool = False
    ) -> dict[str, Any]:
        decoded: dict[str, Any] = {}
        duplicates = value.duplicates if isinstance(value, SeenTwice) else frozenset()
        fields = _fields(descriptor)
        struct = descriptor.name
        for key, item in value.items():
            if key in duplicates:
                self.strict.append(f'duplicate field "{_json_path((path, key))}"')
            if top and key in _TYPE_META:
                decoded[key] = item
                continue
            known = fields.get(key)
            if known is None:
                self.strict.append(f'unknown field "{_json_path((path, key))}"')
                continue
            if item is None:
                continue
            if known.plain_string and type(item) is str:
                if item or not known.omit_empty:
                    decoded[key] = item
                continue
            result = self.field(item, known.descriptor, struct, (go_path, known.embedded, key), (path, key))
            if result or not known.omit_empty:
                decoded[key] = result
        if self.nulls:
            for key, known in fields.items():
                if known.null_when_unset:
                    decoded.setdefault(key, None)
        return decoded

    def field(self, value: Any, field: FieldDescriptor, struct: str, go_path: GoPath, path: Where) -> Any:
        if is_map(field):
            if not isinstance(value, dict):
                return self.mismatch(value, struct, go_path, go_type(field))
            item_field = field.message_type.fields_by_name["value"]
            duplicates = value.duplicates if isinstance(value, SeenTwice) else frozenset()
            decoded = {}
            for key, item in value.items():
                if key in duplicates:
                    self.strict.append(f'duplicate field "{_json_path((path, key))}"')
                decoded[key] = self.single(item, item_field, struct, go_path, (path, key))
            return decoded
        if field.is_repeated:
            if not isinstance(value, list):
                return self.mismatch(value, struct, go_path, go_type(field))
            return [self.single(item, field, struct, go_path, (path, index)) for index, item in enumerate(value)]
        return self.single(value, field, struct, go_path, path)

    def single(self, value: Any, field: FieldDescriptor, struct: str, go_path: GoPath, path: Where) -> Any:
        """One value of ``field``'s type (a list item or map value is one too; ``null`` is its zero value)."""
        if field.type == FieldDescriptor.TYPE_MESSAGE:
            special = _SPECIALS.get(field.message_type.full_name)
            if special is not None:
                return special(self, value, struct, go_path)
            if value is None:
                return {}
            if not isinstance(value, dict):
                return self.mismatch(value, struct, go_path, go_type(field, element=True))
            return self.object(value, field.message_type, go_path, path)
        if value is None:
            return _zero(field)
        return self.scalar(value, field, struct, go_path)

    def scalar(self, value: Any, field: FieldDescriptor, struct: str, go_path: GoPath) -> Any:
        kind = field.type
        if kind == FieldDescriptor.TYPE_STRING and isinstance(value, str):
            return value
        if kind == FieldDescriptor.TYPE_BOOL and isinstance(value, bool):
            return value
        if kind == FieldDescriptor.TYPE_BYTES and isinstance(value, str):
            error = goscalars.base64_error(value)
            if error is not None and self.saved is None:
                self.saved = error
            return value
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if kind in INT_TYPES and number:
            low, high, name = _INT_RANGES.get(kind, _INT64)
            whole = _whole(value)
            if whole is None or not low <= whole <= high:
                return self.mismatch(value, struct, go_path, name, numeric=True)
            return whole
        if kind in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT) and number:
            if not math.isfinite(value):
                raise _Abort(f"json: unsupported value: {_number_text(value)}")
            return value
        return self.mismatch(value, struct, go_path, go_type(field, element=True))


def _whole(value: float) -> int | None:
    """An integer's value; a YAML number such as ``2.0`` is one (it reaches Go as JSON ``2``), JSON ``2.0`` is not."""
    if isinstance(value, int):
        return value
    if isinstance(value, FloatLiteral) or not math.isfinite(value) or not value.is_integer():
        return None
    return int(value)


def _zero(field: FieldDescriptor) -> Any:
    if field.type in INT_TYPES:
        return 0
    return {FieldDescriptor.TYPE_BOOL: False, FieldDescriptor.TYPE_DOUBLE: 0.0, FieldDescriptor.TYPE_FLOAT: 0.0}.get(
        field.type, ""
    )


# --- the special types: each parses its own JSON, and its error stops the decoding ------------------------------


def _mismatch(what: str, struct: str, go_path: GoPath, type_name: str) -> str:
    return f"json: cannot unmarshal {what} into Go struct field {struct}.{_go_path(go_path)} of type {type_name}"


def _via_string(value: Any, struct: str, go_path: GoPath) -> str:
    """Time and Duration read their JSON as a Go string first; anything else fails as that string would."""
    if not isinstance(value, str):
        raise _Abort(_mismatch(_what(value), struct, go_path, "string"))
    return value


def _time(layout: str) -> Callable[[_Walk, Any, str, GoPath], Any]:
    def parse(walk: _Walk, value: Any, struct: str, go_path: GoPath) -> Any:
        if value is None:
            return None
        text = _via_string(value, struct, go_path)
        error = goscalars.time_error(text, layout)
        if error is not None:
            raise _Abort(error)
        return text

    return parse


def _duration(walk: _Walk, value: Any, struct: str, go_path: GoPath) -> Any:
    if value is None:
        return "0s"
    text = _via_string(value, struct, go_path)
    try:
        durations.parse_go_duration(text)
    except ProtobufError:
        raise _Abort(f'time: invalid duration "{text}"') from None
    return text


def _quantity(walk: _Walk, value: Any, struct: str, go_path: GoPath) -> Any:
    if value is None:
        return "0"
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int | float):
        text = _number_text(value)
    else:
        text = value if isinstance(value, str) else "{"
    error = goscalars.quantity_error(text)
    if error is not None:
        raise _Abort(error)
    return text.strip()


def _int_or_string(walk: _Walk, value: Any, struct: str, go_path: GoPath) -> Any:
    if value is None or isinstance(value, str):
        return 0 if value is None else value
    whole = _whole(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    if whole is None or not -(2**31) <= whole < 2**31:
        what = _what(value, numeric=True)
        raise _Abort(_mismatch(what, struct, go_path, "int32"))
    return whole


def _raw(walk: _Walk, value: Any, struct: str, go_path: GoPath) -> Any:
    """Any JSON (RawExtension, FieldsV1); only what JSON cannot write is refused, as Go's encoder refuses it."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise _Abort(f"json: unsupported value: {_number_text(item)}")
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return value


_SPECIALS: dict[str, Callable[[_Walk, Any, str, GoPath], Any]] = {
    QUANTITY: _quantity,
    f"{META}.Time": _time(goscalars.RFC3339),
    f"{META}.MicroTime": _time(goscalars.RFC3339_MICRO),
    f"{META}.Duration": _duration,
    f"{META}.FieldsV1": _raw,
    INT_OR_STRING: _int_or_string,
    f"{RUNTIME}.RawExtension": _raw,
}
