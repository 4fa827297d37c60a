"""A stand-in driver for the tap's pass-through tests: a real gRPC server on a Unix socket, answering unusual
things on purpose (metadata, trailers, errors, streams, a method nobody knows). A plain module, so tests import it
by one unambiguous name."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import grpc

from kubelet_dra.peers.api.calls import CallRecorder


class StandIn(grpc.GenericRpcHandler):
    """Methods under ``/test.StandIn/``: each shows one thing that must pass the tap unchanged."""

    def __init__(self) -> None:
        self.cancelled = asyncio.Event()
        self.deadlines: list[float | None] = []
        self.metadata: list[dict[str, str | bytes]] = []

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        name = details.method.rsplit("/", 1)[-1]
        if name == "Echo":
            return grpc.unary_unary_rpc_method_handler(self.echo)
        if name == "Fail":
            return grpc.unary_unary_rpc_method_handler(self.fail)
        if name == "Count":
            return grpc.unary_stream_rpc_method_handler(self.count)
        if name == "Chat":
            return grpc.stream_stream_rpc_method_handler(self.chat)
        if name == "Hang":
            return grpc.unary_unary_rpc_method_handler(self.hang)
        return None

    async def echo(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        self.deadlines.append(context.time_remaining())
        self.metadata.append(dict(context.invocation_metadata() or ()))
        await context.send_initial_metadata((("x-first", "hello"),))
        context.set_trailing_metadata((("x-last", "bye"), ("x-blob-bin", b"\x00\xff")))
        return request[::-1]

    async def fail(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        await context.abort(grpc.StatusCode.FAILED_PRECONDITION, "no power", (("x-reason", "fuse"),))
        raise AssertionError("abort returns never")

    async def count(self, request: bytes, context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        for number in range(int(request.decode())):
            yield str(number).encode()
        context.set_code(grpc.StatusCode.RESOURCE_EXHAUSTED)
        context.set_details("that is all")

    async def chat(self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext) -> AsyncIterator[bytes]:
        async for request in requests:
            yield b"re: " + request

    async def hang(self, request: bytes, context: grpc.aio.ServicerContext) -> bytes:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return b""


class Through:
    """The stand-in's socket, the tap's socket in front of it, and the tap's records."""

    def __init__(self, driver: Path, tap: Path, standin: StandIn, recorder: CallRecorder) -> None:
        self.driver, self.tap, self.standin, self.recorder = driver, tap, standin, recorder

    def channel(self, which: str = "tap") -> grpc.aio.Channel:
        return grpc.aio.insecure_channel(f"unix:{self.tap if which == 'tap' else self.driver}")
