"""gRPC method handlers with the Go helper's request IDs and logging.

Like the helper's interceptors (docs/protocol.md#helper-defaults), every unary call and every stream on both of the
driver's servers takes the next number of one process-wide counter as its ``requestID``; the
request and response are logged at ``-v 6``. A handler that raises ``CallFailed`` fails the call
with status UNKNOWN and that message, which is what a Go handler returning an error produces.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
from google.protobuf import text_format
from google.protobuf.message import Message

from kubelet_dra.peers.errors import KubeletDRAError
from kubelet_dra.peers.log import Logger

GRPC_VERBOSITY = 6

_request_ids = itertools.count(1)

Unary = Callable[[Any], Awaitable[Message]]
Streaming = Callable[[Any], AsyncIterator[Message]]


class CallFailed(KubeletDRAError):
    """The whole call fails: the caller gets gRPC status UNKNOWN with this text."""


def next_request_id() -> int:
    return next(_request_ids)


def _text(message: Message) -> str:
    return text_format.MessageToString(message, as_one_line=True)


def unary(
    path: str, behaviour: Unary, request_class: type[Message], response_class: type[Message], log: Logger
) -> grpc.RpcMethodHandler:
    """A unary-unary handler for ``path`` that runs ``behaviour(request)``."""

    async def handle(request: Message, context: grpc.aio.ServicerContext) -> Message:
        logger = log.with_values(requestID=next_request_id(), method=path)
        logger.v(GRPC_VERBOSITY).info("handling request", request=_text(request))
        try:
            response = await behaviour(request)
        except CallFailed as err:
            logger.error("handling request failed", err)
            await context.abort(grpc.StatusCode.UNKNOWN, err.what)
        except KubeletDRAError as err:
            logger.error("handling request failed", err)
            await context.abort(grpc.StatusCode.UNKNOWN, str(err))
        logger.v(GRPC_VERBOSITY).info("handling request succeeded", response=_text(response))
        return response

    return grpc.unary_unary_rpc_method_handler(
        handle, request_deserializer=request_class.FromString, response_serializer=response_class.SerializeToString
    )


def server_streaming(
    path: str, behaviour: Streaming, request_class: type[Message], response_class: type[Message], log: Logger
) -> grpc.RpcMethodHandler:
    """A unary-stream handler for ``path`` that sends what ``behaviour(request)`` yields."""

    async def handle(request: Message, context: grpc.aio.ServicerContext) -> AsyncIterator[Message]:
        logger = log.with_values(requestID=next_request_id(), method=path)
        logger.v(GRPC_VERBOSITY).info("handling stream", request=_text(request))
        async for response in behaviour(request):
            logger.v(GRPC_VERBOSITY).info("sending stream response", response=_text(response))
            yield response

    return grpc.unary_stream_rpc_method_handler(
        handle, request_deserializer=request_class.FromString, response_serializer=response_class.SerializeToString
    )


class Routes(grpc.GenericRpcHandler):
    """Looks each incoming method path up in a table that ``table()`` computes per call.

    The served services depend on fault knobs that may flip at run time (``versions``,
    ``serve-advertised-name``), so the table is consulted anew for every call.
    """

    def __init__(self, table: Callable[[], dict[str, grpc.RpcMethodHandler]]) -> None:
        self._table = table

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        return self._table().get(handler_call_details.method)
