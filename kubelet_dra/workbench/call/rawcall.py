"""One unary call on a fresh connection, timed and recorded like the node's own calls.

For callers whose subject is the wire itself: the conformance suite asking GetInfo again or a
service under another name, and ``kubelet-dra call``. The method path and message classes are
taken as given; the call takes the process's next request ID, as every call does.
"""

from __future__ import annotations

import time

import grpc
from google.protobuf.message import Message

from kubelet_dra.peers.api.calls import CallRecord, message_json, next_request_id
from kubelet_dra.peers.log import Logger


async def call_once(
    target: str,
    method_path: str,
    request: Message,
    response_class: type[Message],
    *,
    timeout: float,
    log: Logger,
    driver: str = "",
) -> tuple[Message | None, CallRecord]:
    """Call ``method_path`` on the Unix socket ``target``; the answer (``None`` when the call failed) and its record.

    A failed call is not raised: its status and details are in the record, for the caller to judge.
    """
    request_id = next_request_id()
    log = log.with_values(requestID=request_id, method=method_path, target=target)
    log.v(6).info("Calling", request=message_json(request))
    channel = grpc.aio.insecure_channel(f"unix:{target}")
    method = channel.unary_unary(
        method_path, request_serializer=type(request).SerializeToString, response_deserializer=response_class.FromString
    )
    started, clock = time.time(), time.monotonic()
    response: Message | None = None
    status, details = "OK", ""
    try:
        response = await method(request, timeout=timeout)
    except grpc.aio.AioRpcError as err:
        status, details = err.code().name, err.details() or ""
        log.v(6).info("Call failed", status=status, details=details)
    else:
        log.v(6).info("Call done", response=message_json(response))
    finally:
        duration = time.monotonic() - clock
        await channel.close()
    record = CallRecord(
        request_id=request_id,
        driver=driver,
        endpoint=target,
        method=method_path,
        streaming=False,
        request=request,
        response=response,
        status=status,
        details=details,
        started_at=started,
        duration=duration,
    )
    return response, record
