"""Calls to one DRA driver instance: the negotiated service, deadlines, request IDs, the call recorder.

Callers work in v1 messages; a plugin that negotiated v1beta1 (or, with the legacy flag,
v1alpha4) gets its own version on the wire and its answers come back as v1 (docs/protocol.md#grpc-api).
Every call and stream takes the next request ID of this process, which appears in each log
line about it and in its record. Each unary call is also timed into the node's
``dra_grpc_operations_duration_seconds`` (streams are not, like in the kubelet).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import grpc
from google.protobuf.message import Message

from kubelet_dra.kubelet.metrics.metrics import DRAMetrics
from kubelet_dra.peers.api import dra_v1_pb2
from kubelet_dra.peers.api.calls import CallRecord, CallRecorder, message_json, next_request_id
from kubelet_dra.peers.api.convert import to_service
from kubelet_dra.peers.api.services import DRA_V1, HealthResponse, Service
from kubelet_dra.peers.log import Logger

DEFAULT_CALL_TIMEOUT = 45.0
CONNECTION_CLOSING = "grpc: the client connection is closing"
"""What Go's gRPC client answers (code CANCELLED) for a call whose connection is closed under it."""


class DRAClient:
    def __init__(
        self,
        *,
        driver: str,
        endpoint: str,
        channel: grpc.aio.Channel,
        service: Service,
        recorder: CallRecorder,
        metrics: DRAMetrics,
        log: Logger,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
    ) -> None:
        self.driver = driver
        self.endpoint = endpoint
        self.service = service
        self.call_timeout = call_timeout
        self._channel = channel
        self._stub = service.stub(channel)
        self._recorder = recorder
        self._metrics = metrics
        self._log = log

    async def node_prepare_resources(
        self, request: dra_v1_pb2.NodePrepareResourcesRequest
    ) -> dra_v1_pb2.NodePrepareResourcesResponse:
        return await self._unary("NodePrepareResources", request)  # type: ignore[return-value]

    async def node_unprepare_resources(
        self, request: dra_v1_pb2.NodeUnprepareResourcesRequest
    ) -> dra_v1_pb2.NodeUnprepareResourcesResponse:
        return await self._unary("NodeUnprepareResources", request)  # type: ignore[return-value]

    async def node_watch_resources(self, service: Service, handle: Callable[[HealthResponse], None]) -> None:
        """Follow the health stream of ``service`` (v1 or v1alpha1: the same messages) with no deadline, passing
        each message to ``handle``, until it ends.

        Raises ``grpc.aio.AioRpcError`` when the stream fails, including ``UNIMPLEMENTED`` for
        drivers without the health service.
        """
        method = service.method_path("NodeWatchResources")
        request = service.message_class("NodeWatchResourcesRequest")()
        request_id = next_request_id()
        log = self._log.with_values(requestID=request_id, method=method)
        request_json = message_json(request)
        log.v(6).info("Opening stream", request=request_json)
        received: list[dict[str, Any]] = []
        started, clock = time.time(), time.monotonic()
        status, details = "OK", ""
        call = service.stub(self._channel).NodeWatchResources(request)
        try:
            async for response in call:
                received.append(message_json(response))
                log.v(6).info("Stream message", response=received[-1])
                handle(response)
        except grpc.aio.AioRpcError as err:
            status, details = err.code().name, err.details() or ""
            raise
        except BaseException:
            status, details = "CANCELLED", "stream closed by kubelet-dra"
            call.cancel()
            raise
        finally:
            log.v(6).info("Stream ended", status=status, details=details)
            self._record(request_id, method, True, request_json, received, status, details, started, clock)

    async def _unary(self, method: str, request: Message) -> Message:
        path = self.service.method_path(method)
        wire_request = to_service(request, self.service)
        request_id = next_request_id()
        log = self._log.with_values(requestID=request_id, method=path)
        if (calling := log.v(6)).enabled:
            calling.info("Calling", request=message_json(wire_request))
        started, clock = time.time(), time.monotonic()
        code, details = grpc.StatusCode.OK, ""
        answer: Message | None = None
        try:
            response = await getattr(self._stub, method)(wire_request, timeout=self.call_timeout)
        except grpc.aio.AioRpcError as err:
            code, details = err.code(), err.details() or ""
            log.v(6).info("Call failed", status=code.name, details=details)
            raise
        except (asyncio.CancelledError, grpc.aio.UsageError) as err:
            code = grpc.StatusCode.CANCELLED
            if isinstance(err, asyncio.CancelledError) and _cancelled_by_caller():
                details = "call cancelled by kubelet-dra"
                raise
            # The instance was unregistered and its channel closed during the call (cancelled) or before it
            # (grpc's "Channel is closed."): a gRPC error, as in Go, so callers handle it like any failed call
            # instead of being cancelled or failing themselves.
            details = CONNECTION_CLOSING
            log.v(6).info("Call failed", status=code.name, details=details)
            raise grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details) from None
        else:
            answer = response
            if (done := log.v(6)).enabled:
                done.info("Call done", response=message_json(response))
        finally:
            self._metrics.observe_grpc(self.driver, path, code, time.monotonic() - clock)
            self._record(request_id, path, False, wire_request, answer, code.name, details, started, clock)
        return to_service(response, DRA_V1)

    def _record(
        self,
        request_id: int,
        method: str,
        streaming: bool,
        request: Message | dict[str, Any],
        response: Message | list[dict[str, Any]] | None,
        status: str,
        details: str,
        started: float,
        clock: float,
    ) -> None:
        self._recorder.add(
            CallRecord(
                request_id=request_id,
                driver=self.driver,
                endpoint=self.endpoint,
                method=method,
                streaming=streaming,
                request=request,
                response=response,
                status=status,
                details=details,
                started_at=started,
                duration=time.monotonic() - clock,
            )
        )


def _cancelled_by_caller() -> bool:
    """Whether the running task itself is being cancelled (rather than only the gRPC call under it)."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0
