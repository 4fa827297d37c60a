"""One kubelet gRPC call made by hand: timed, with the raw error, and what the kubelet would make of the answer.

Like grpcurl for the kubelet's side of DRA. The request comes from ``callrequest``, the way from
``callroute`` (a DRA call goes where the registration socket's GetInfo points, on the service the
kubelet would negotiate; a service socket is called directly), the notes from ``callnotes``.
Prepare, unprepare and the health stream go through the kubelet's own client (service version,
deadline, request ID), and their answers are judged with the DRA manager's own rules.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import attrs
import grpc
from google.protobuf.message import Message

from kubelet_dra.kubelet.cm.dra import ClaimError
from kubelet_dra.kubelet.cm.dra.drivers import check_answers
from kubelet_dra.kubelet.cm.dra.plugin import DEFAULT_CALL_TIMEOUT, CallRecord, CallRecorder, DRAClient
from kubelet_dra.kubelet.metrics.metrics import DRAMetrics
from kubelet_dra.kubelet.pluginmanager.operationexecutor.operation_generator import DEFAULT_TIMEOUTS
from kubelet_dra.peers.api import pluginregistration_pb2 as registration_pb2
from kubelet_dra.peers.api.calls import message_json
from kubelet_dra.peers.api.goformat import go_status_error
from kubelet_dra.peers.api.services import REGISTRATION, HealthResponse, Service
from kubelet_dra.peers.log import Logger
from kubelet_dra.workbench.call.notes import failure_notes, latency_notes
from kubelet_dra.workbench.call.rawcall import call_once
from kubelet_dra.workbench.call.request import GET_INFO, NOTIFY, PREPARE, UNPREPARE, WATCH, response_class
from kubelet_dra.workbench.call.route import kubelet_choice, route

KUBELET_DEADLINES: dict[str, float] = {
    GET_INFO: DEFAULT_TIMEOUTS.get_info,
    NOTIFY: DEFAULT_TIMEOUTS.notify,
    PREPARE: DEFAULT_CALL_TIMEOUT,
    UNPREPARE: DEFAULT_CALL_TIMEOUT,
}
"""The deadline the kubelet gives each unary method, the default here, so a slow driver fails as it would there."""
DEFAULT_WATCH_FOR = 10.0
DEFAULT_LATENCY_WARNING = 5.0
GRPC_EXIT_BASE = 64
"""A failed call exits with 64 + its gRPC status code, as grpcurl does."""


@attrs.frozen
class CallOptions:
    timeout: float | None = None
    """The call's deadline; ``None``: the kubelet's for the method."""
    service: str = ""
    """The advertised identifier of the DRA service to call; empty: what the kubelet would negotiate."""
    watch_for: float = DEFAULT_WATCH_FOR
    latency_warning: float = DEFAULT_LATENCY_WARNING


@attrs.frozen
class HandCall:
    """A call made by hand: every call it took (GetInfo to find the way, then the call), and the judgement."""

    socket: str
    method: str
    records: tuple[CallRecord, ...]
    status: str
    """The status that counts: the call's, or GetInfo's when the way was not found; OK for a stream closed on time."""
    verdict: str = ""
    """Why the kubelet would not accept the answer (or would never make the call); empty when it would."""
    notes: tuple[str, ...] = ()
    route: str = ""
    """How the call found its way: the socket's GetInfo, or a service socket called directly."""

    @property
    def exit_code(self) -> int:
        if self.status != "OK":
            return GRPC_EXIT_BASE + grpc.StatusCode[self.status].value[0]
        return 1 if self.verdict else 0

    @property
    def error(self) -> str:
        """The failed call's error as the kubelet logs it."""
        last = self.records[-1] if self.records else None
        if self.status == "OK" or last is None:
            return ""
        return go_status_error(grpc.StatusCode[last.status], last.details)

    def to_json(self) -> dict[str, Any]:
        return {
            "socket": self.socket,
            "method": self.method,
            "route": self.route,
            "status": self.status,
            "error": self.error,
            "verdict": self.verdict,
            "notes": list(self.notes),
            "exitCode": self.exit_code,
            "calls": [record.to_json() for record in self.records],
        }


async def hand_call(
    socket: str,
    method: str,
    request: Message,
    options: CallOptions,
    log: Logger,
    on_message: Callable[[dict[str, Any]], None] = lambda _: None,
) -> HandCall:
    """Make the call; ``on_message`` sees each health stream message as it arrives."""
    timeout = options.timeout if options.timeout is not None else KUBELET_DEADLINES.get(method, 0.0)
    if method in (GET_INFO, NOTIFY):
        return await _registration_call(socket, method, request, timeout, options, log)
    way = await route(socket, options.service, log)
    first = way.records[-1] if way.records else None
    if first is not None and first.status not in ("OK", "UNIMPLEMENTED"):
        notes = await failure_notes(first, socket, DEFAULT_TIMEOUTS.get_info)
        return HandCall(socket, method, way.records, first.status, notes=notes)
    if way.service is None:
        verdict = f"the kubelet rejects this driver, so it never makes the call: {way.refused}"
        notes = ("pass --service v1.DRAPlugin (or v1beta1.DRAPlugin) to call the service anyway",)
        return HandCall(socket, method, way.records, "OK", verdict, notes, way.text)
    recorder = CallRecorder()
    channel = grpc.aio.insecure_channel(f"unix:{way.endpoint}")
    client = DRAClient(
        driver=way.driver,
        endpoint=way.endpoint,
        channel=channel,
        service=way.service,
        recorder=recorder,
        metrics=DRAMetrics(),
        log=log.with_values(endpoint=way.endpoint),
        call_timeout=timeout,
    )
    try:
        if method == WATCH:
            status, notes = await _watch(client, way.health_service(), options.watch_for, on_message)
            verdict = ""
        else:
            status, verdict = await _claims_call(client, method, request)
    finally:
        await channel.close()
    (record,) = recorder.records()
    if method != WATCH:
        notes = latency_notes(record, timeout, options.latency_warning)
    if record.status not in ("OK", "CANCELLED"):
        notes = (*notes, *await failure_notes(record, way.endpoint, timeout))
    return HandCall(socket, method, (*way.records, record), status, verdict, notes, way.text)


async def _registration_call(
    socket: str, method: str, request: Message, timeout: float, options: CallOptions, log: Logger
) -> HandCall:
    response, record = await call_once(
        socket, REGISTRATION.method_path(method), request, response_class(method), timeout=timeout, log=log
    )
    if response is None:
        return HandCall(socket, method, (record,), record.status, notes=await failure_notes(record, socket, timeout))
    notes = latency_notes(record, timeout, options.latency_warning)
    verdict = ""
    if isinstance(response, registration_pb2.PluginInfo):
        service, verdict = kubelet_choice(socket, response)
        if service is not None:
            endpoint = response.endpoint or socket
            notes = (*notes, f"the kubelet would register {response.name} and call {service.advertised} at {endpoint}")
    return HandCall(socket, method, (record,), "OK", verdict, notes)


async def _claims_call(client: DRAClient, method: str, request: Message) -> tuple[str, str]:
    """(status, verdict) of a prepare or unprepare call, judged as the DRA manager judges the answer."""
    call = client.node_prepare_resources if method == PREPARE else client.node_unprepare_resources
    try:
        response = await call(request)  # type: ignore[arg-type]
    except grpc.aio.AioRpcError as err:
        return err.code().name, ""
    try:
        check_answers(method, request.claims, response.claims)  # type: ignore[attr-defined]
    except ClaimError as err:
        return "OK", f"the kubelet fails the pod: {err}"
    return "OK", ""


async def _watch(
    client: DRAClient, service: Service, seconds: float, on_message: Callable[[dict[str, Any]], None]
) -> tuple[str, tuple[str, ...]]:
    """Follow the health stream for ``seconds``; a stream still open then is a success."""
    received = 0

    def handle(message: HealthResponse) -> None:
        nonlocal received
        received += 1
        on_message(message_json(message))

    try:
        await asyncio.wait_for(client.node_watch_resources(service, handle), seconds)
    except TimeoutError:
        return "OK", (f"{received} message(s) in {seconds:g} s; the stream was still open",)
    except grpc.aio.AioRpcError as err:
        if err.code() is grpc.StatusCode.UNIMPLEMENTED:
            return err.code().name, (
                f"{service.advertised} is not served: health is optional; a 1.36 kubelet only logs it (F13), a 1.37"
                " kubelet stops asking, and never asks a driver that does not advertise it",
            )
        return err.code().name, (f"{received} message(s) before the stream failed",)
    return "OK", (f"{received} message(s); the driver ended the stream, the kubelet reopens it after 5 s",)
