"""What the tap knows about a method path: its message classes and whether the driver answers with a stream.

Read from the service table (``api.services``), so every service kubelet-dra speaks is decoded
for the record. A path the table does not have is still forwarded, byte for byte; its messages
are recorded as base64 under ``raw``, because nothing says what they are.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from typing import Any

import attrs
from google.protobuf.message import DecodeError, Message

from kubelet_dra.peers.api.calls import message_json
from kubelet_dra.peers.api.services import ALL_SERVICES


@attrs.frozen
class MethodShape:
    request: type[Message]
    response: type[Message]
    streaming: bool
    """The driver answers with a stream (``NodeWatchResources``)."""


def _known_methods() -> dict[str, MethodShape]:
    shapes: dict[str, MethodShape] = {}
    for service in ALL_SERVICES:
        for method in service.descriptor.methods:
            shapes[service.method_path(method.name)] = MethodShape(
                request=service.message_class(method.input_type.name),
                response=service.message_class(method.output_type.name),
                streaming=method.server_streaming,
            )
    return shapes


KNOWN_METHODS: dict[str, MethodShape] = _known_methods()


def raw_json(data: bytes) -> dict[str, Any]:
    """A message the tap cannot decode, as it went over the wire."""
    return {"raw": base64.b64encode(data).decode("ascii")}


def decode(data: bytes, message_class: type[Message] | None) -> dict[str, Any]:
    """One wire message as JSON: decoded when its class is known and it parses, raw otherwise."""
    if message_class is not None:
        try:
            return message_json(message_class.FromString(data))
        except DecodeError:
            pass
    return raw_json(data)


def decode_all(messages: Sequence[bytes], message_class: type[Message] | None) -> list[dict[str, Any]]:
    return [decode(data, message_class) for data in messages]
