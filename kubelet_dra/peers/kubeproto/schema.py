"""The schema of every served kind: the message descriptors of ``proto/k8s`` and what their options mean.

A field's proto name is its JSON name. Two field options carry Go's JSON rules that a descriptor
alone does not: ``inline`` marks a message whose fields sit in its parent's JSON object (Go's
``json:",inline"``, e.g. a Volume's source), ``nullable`` a field Go writes as null when empty.
"""

from __future__ import annotations

import functools
from typing import Any

from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from kubelet_dra.peers.kubeproto import (  # noqa: F401  (importing registers the descriptors)
    coordination_v1_pb2,
    core_v1_pb2,
    intstr_pb2,
    meta_v1_pb2,
    node_v1_pb2,
    options_pb2,
    resource_quantity_pb2,
    resource_v1_pb2,
    resource_v1beta1_pb2,
    resource_v1beta2_pb2,
    runtime_pb2,
    storage_v1_pb2,
)

META = "k8s.io.apimachinery.pkg.apis.meta.v1"
RUNTIME = "k8s.io.apimachinery.pkg.runtime"
QUANTITY = "k8s.io.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "k8s.io.apimachinery.pkg.util.intstr.IntOrString"
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
INT_TYPES = frozenset(
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


class ProtobufError(ValueError):
    """A protobuf body that cannot be read or a document that cannot be written; says where."""


def package_of(api_version: str) -> str:
    """The proto package of an ``apiVersion``: ``v1`` -> core/v1, ``resource.k8s.io/v1`` -> resource/v1."""
    group, _, version = api_version.rpartition("/")
    return f"k8s.io.api.{group.removesuffix('.k8s.io').replace('.', '') or 'core'}.{version}"


def descriptor_of(api_version: str, kind: str) -> Descriptor:
    """The message descriptor of ``kind`` at ``api_version``; ProtobufError when we have no such type."""
    package = META if kind in META_KINDS else package_of(api_version)
    try:
        return descriptor_pool.Default().FindMessageTypeByName(f"{package}.{kind}")
    except KeyError:
        raise ProtobufError(f"no protobuf type for kind {kind!r} of {api_version!r}") from None


def message_class(api_version: str, kind: str) -> type[Message]:
    """The generated class of ``kind`` at ``api_version``; ProtobufError when we have no such type."""
    return message_factory.GetMessageClass(descriptor_of(api_version, kind))


def is_map(field: FieldDescriptor) -> bool:
    return field.type == FieldDescriptor.TYPE_MESSAGE and field.message_type.GetOptions().map_entry


@functools.cache
def is_inline(field: FieldDescriptor) -> bool:
    return field.GetOptions().Extensions[options_pb2.inline]


@functools.cache
def inline_fields(descriptor: Descriptor) -> tuple[FieldDescriptor, ...]:
    return tuple(field for field in descriptor.fields if is_inline(field))


@functools.cache
def nullable_fields(descriptor: Descriptor) -> tuple[FieldDescriptor, ...]:
    return tuple(field for field in descriptor.fields if field.GetOptions().Extensions[options_pb2.nullable])


def is_list(descriptor: Descriptor) -> bool:
    return descriptor.name.endswith("List") and "items" in descriptor.fields_by_name


def json_type(value: Any) -> str:
    """How an error names a JSON value: its type, and the value itself for numbers and strings."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    return {dict: "an object", list: "an array"}.get(type(value), type(value).__name__)
