"""Forward every gRPC call on one socket to another, byte for byte, and record it.

Every method is served as a bidirectional stream whatever its declared kind: on the wire a unary
call and a stream look the same (headers, length-prefixed messages, trailers), so one path
forwards unary calls, server streams and methods the tap has never heard of alike. The caller's
deadline and metadata go to the driver; the driver's initial metadata, messages, status code,
details and trailing metadata come back unchanged. Known methods are decoded for the record only.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import attrs
import grpc

from kubelet_dra.peers.api.calls import CALLS_KEPT, CallRecord, CallRecorder, next_request_id
from kubelet_dra.peers.log import Logger
from kubelet_dra.workbench.tap.faults import WireFaults
from kubelet_dra.workbench.tap.methods import KNOWN_METHODS, decode_all
from kubelet_dra.workbench.tap.wirecalls import WireCall

UNLIMITED_MESSAGES = (("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1))
"""The tap never refuses a message either side would accept: message size limits stay the two ends' own."""

HALF_CLOSE_GRACE = 0.2
"""How long the tap waits for the caller to finish the request of a method it does not know before it forwards the
request as a stream; a unary caller sends its message and the half-close together, well within it."""

Rewrite = Callable[[str, bytes], Awaitable[bytes]]
"""Changes one answer of the driver before the caller gets it (the tap's own endpoint in GetInfo)."""


async def _unchanged(method: str, data: bytes) -> bytes:
    return data


def forwarded_metadata(metadata: Any) -> list[tuple[str, str | bytes]]:
    """The caller's metadata minus what gRPC itself sets for each hop (pseudo-headers, ``grpc-*``, user agent)."""
    return [
        (key, value)
        for key, value in metadata or ()
        if not key.startswith((":", "grpc-")) and key not in ("user-agent", "content-type", "te")
    ]


class Upstream:
    """The driver's socket and one channel to it, replaced when the driver names another endpoint."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.channel = grpc.aio.insecure_channel(f"unix:{path}", options=UNLIMITED_MESSAGES)

    async def retarget(self, path: str) -> None:
        if path != self.path:
            old = self.channel
            self.path, self.channel = path, grpc.aio.insecure_channel(f"unix:{path}", options=UNLIMITED_MESSAGES)
            await old.close()

    async def close(self) -> None:
        await self.channel.close()


@attrs.define
class OpenCall:
    """A call that has not ended yet (a health stream stays open for as long as the driver is registered)."""

    request_id: int
    driver: str
    method: str
    started_at: float
    messages: int = 0
    """Answers forwarded so far."""


class Forwarder(grpc.GenericRpcHandler):
    """Serves any method path by calling the same path on ``upstream``; every call becomes one ``CallRecord``."""

    def __init__(
        self,
        upstream: Upstream,
        recorder: CallRecorder,
        log: Logger,
        *,
        driver: str = "",
        rewrite: Rewrite = _unchanged,
        faults: WireFaults | None = None,
    ) -> None:
        self.upstream = upstream
        self.driver = driver
        """The driver name the records carry ("" on the registration socket, as the node records it)."""
        self._recorder = recorder
        self._log = log
        self._rewrite = rewrite
        self._faults = faults
        """The wire knobs to carry out on each call (``kubelet_dra.workbench.tap.wirecalls``)."""
        self.open_calls: dict[int, OpenCall] = {}
        """The calls in progress, by request ID: records are written when a call ends, these show it before."""

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        """Every method, but one the wire knobs do not serve: gRPC answers it as a server without it does."""
        method = handler_call_details.method
        wire = WireCall(method, self._faults, self._log.with_values(driver=self.driver)) if self._faults else None
        if wire is not None and wire.target is None:
            return None
        return grpc.stream_stream_rpc_method_handler(functools.partial(self._forward, method, wire))

    async def _forward(
        self, method: str, wire: WireCall | None, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[bytes]:
        request_id = next_request_id()
        log = self._log.with_values(requestID=request_id, method=method, driver=self.driver)
        started, clock = time.time(), time.monotonic()
        self.open_calls[request_id] = open_call = OpenCall(request_id, self.driver, method, started)
        # A health stream stays open for as long as the driver is registered: its record keeps the last messages.
        sent: deque[bytes] = deque(maxlen=CALLS_KEPT)
        received: deque[bytes] = deque(maxlen=CALLS_KEPT)
        code, details, trailing = grpc.StatusCode.OK, "", grpc.aio.Metadata()
        shape = KNOWN_METHODS.get(method)
        streams = shape is None or shape.streaming
        call: Any = None
        answers: list[bytes] = []
        try:
            forwarded = await _read_requests(requests, sent, None if shape else HALF_CLOSE_GRACE)
            ending = None
            if wire is not None:  # held, failed or changed by the wire knobs
                forwarded, ending = await wire.before(forwarded)
                if ending is not None:
                    code, details = ending.code, ending.details
                    received.extend([] if ending.answer is None else [wire.answer(ending.answer)])
            if ending is None:
                target = (wire.target or method) if wire else method
                # the deadline as it is now: a call a knob held has had some of it
                options = {
                    "timeout": context.time_remaining(),
                    "metadata": forwarded_metadata(context.invocation_metadata()),
                }
                if isinstance(forwarded, list) and len(forwarded) == 1:
                    call = self.upstream.channel.unary_stream(target)(forwarded[0], **options)
                else:
                    whole = iter(forwarded) if isinstance(forwarded, list) else forwarded
                    call = self.upstream.channel.stream_stream(target)(whole, **options)
                headers = await call.initial_metadata()
                if headers:
                    await context.send_initial_metadata(headers)
                async for data in call:
                    received.append(wire.answer(data) if wire else data)
                    open_call.messages += 1
                    if streams:
                        yield await self._rewrite(method, received[-1])
                code, details, trailing = await call.code(), await call.details(), await call.trailing_metadata()
            if wire is not None and (code, details) != (ended := wire.ended(code, details)):
                (code, details), answers = ended, []
                received.clear()  # the caller gets the injected error, not the driver's answer
            elif not streams:  # rewritten before the record ends: the caller waits for the rewrite too
                answers = [await self._rewrite(method, data) for data in received]
        except grpc.aio.AioRpcError as err:
            code, details, trailing = err.code(), err.details() or "", err.trailing_metadata()
        except BaseException:
            # The caller cancelled (the kubelet closed a health stream, or gave up at its deadline), or the tap stops.
            if call is not None:
                call.cancel()
            code, details = grpc.StatusCode.CANCELLED, "cancelled by the caller or the tap's stop"
            remaining = context.time_remaining()
            if remaining is not None and remaining <= 0:  # the caller's deadline, which the driver had too, passed
                code, details = grpc.StatusCode.DEADLINE_EXCEEDED, "the caller's deadline passed"
            raise
        finally:
            del self.open_calls[request_id]
            self._record(request_id, method, sent, received, code, details, started, clock)
            log.v(6).info("Forwarded", status=code.name, details=details, messages=len(received))
        if not streams:
            # A single answer goes out once the driver's call has ended and is recorded: a caller that hangs up as
            # soon as it has its answer (the kubelet after NotifyRegistrationStatus) would otherwise cancel the
            # record of a call that succeeded.
            for data in answers:
                yield data
        context.set_trailing_metadata(tuple(trailing))
        if code is not grpc.StatusCode.OK:
            context.set_code(code)
            context.set_details(details)

    def _record(
        self,
        request_id: int,
        method: str,
        sent: deque[bytes],
        received: deque[bytes],
        code: grpc.StatusCode,
        details: str,
        started: float,
        clock: float,
    ) -> None:
        shape = KNOWN_METHODS.get(method)
        streaming = shape.streaming if shape else True
        requests = decode_all(sent, shape.request if shape else None)
        responses = decode_all(received, shape.response if shape else None)
        request = requests[0] if len(requests) == 1 else {"messages": requests}
        response: dict[str, Any] | list[dict[str, Any]] | None = responses
        if not streaming:
            response = responses[0] if code is grpc.StatusCode.OK and len(responses) == 1 else None
        self._recorder.add(
            CallRecord(
                request_id=request_id,
                driver=self.driver,
                endpoint=self.upstream.path,
                method=method,
                streaming=streaming,
                request=request,
                response=response,
                status=code.name,
                details=details,
                started_at=started,
                duration=time.monotonic() - clock,
            )
        )


async def _read_requests(
    requests: AsyncIterator[bytes], sent: deque[bytes], grace: float | None
) -> list[bytes] | AsyncIterator[bytes]:
    """Read the caller's messages (each kept in ``sent`` too) until it half-closes; all of them once it has, or,
    when it sends nothing more within ``grace`` (a streaming request), the messages to forward as they come (those
    read so far first).

    A request sent whole is sent on whole, with the half-close, as the kubelet's own client does: writing to a Go
    driver that already answered (UNIMPLEMENTED, at once) turns its status into INTERNAL "Internal error from Core"
    in half the calls. Known methods all take one request, so they wait for the half-close however long it takes.
    """
    iterator = aiter(requests)
    read: list[bytes] = []
    while True:
        pending = asyncio.ensure_future(anext(iterator))
        pending.add_done_callback(_observed)
        try:
            done, _ = await asyncio.wait({pending}, timeout=grace)
        except asyncio.CancelledError:
            pending.cancel()
            raise
        if not done:
            return _stream(read, pending, iterator, sent)
        try:
            read.append(pending.result())
        except StopAsyncIteration:
            return read
        sent.append(read[-1])


def _observed(read: asyncio.Future[bytes]) -> None:
    """Take a read's outcome as seen: a stream the call stopped forwarding (its end, the tap's SIGTERM) leaves the
    last read to nobody, and asyncio would print its StopAsyncIteration as an exception never retrieved."""
    if not read.cancelled():
        read.exception()


async def _stream(
    read: list[bytes], pending: asyncio.Future[bytes], iterator: AsyncIterator[bytes], sent: deque[bytes]
) -> AsyncIterator[bytes]:
    """The messages already ``read``, then the ``pending`` one and the rest as they come, each kept in ``sent``."""
    for data in read:
        yield data
    try:
        data = await pending
    except StopAsyncIteration:
        return
    sent.append(data)
    yield data
    async for data in iterator:
        sent.append(data)
        yield data
