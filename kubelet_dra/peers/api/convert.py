"""Conversion of DRA messages between API versions (v1 ↔ v1beta1, v1 ↔ legacy v1alpha4).

The kubelet works in v1 types; for a plugin that negotiated an older service it converts the
request down and the response back up (docs/protocol.md#grpc-api). All these versions share one
message layout with identical field numbers, except that v1 adds ``Device.share_id`` (5), so one
generic conversion serves every message: re-encode and parse as the target type. Fields the
target does not know would survive that as *unknown fields* and reappear when the message is
re-serialized, so they are discarded: v1 → v1beta1 really drops ``share_id``.
"""

from __future__ import annotations

from typing import TypeVar

from google.protobuf.message import Message

from kubelet_dra.peers.api.services import Service

M = TypeVar("M", bound=Message)


def convert(message: Message, target: type[M]) -> M:
    """``message`` as the same-named message of another API version; fields ``target`` lacks are dropped."""
    source_name = message.DESCRIPTOR.name
    if source_name != target.DESCRIPTOR.name:
        raise TypeError(f"cannot convert {message.DESCRIPTOR.full_name} to {target.DESCRIPTOR.full_name}")
    converted = target.FromString(message.SerializeToString())
    converted.DiscardUnknownFields()
    return converted


def to_service(message: Message, service: Service) -> Message:
    """``message`` in ``service``'s API version: a request on its way to a plugin, or a response back to v1.

    A message already of that version is returned as is.
    """
    target = service.message_class(message.DESCRIPTOR.name)
    return message if isinstance(message, target) else convert(message, target)
