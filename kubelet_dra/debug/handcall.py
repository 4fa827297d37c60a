"""One kubelet gRPC call made by hand: timed, with the raw error, and what the kubelet would make of the answer.

Like grpcurl for the kubelet's side of DRA, with the ``.proto`` files built in (drivers serve no
reflection). Given a registration socket, a DRA call goes where its GetInfo points, on the service
the kubelet would negotiate; given a service socket, straight there. Prepare, unprepare and the
health stream go through the kubelet's own client (service version, deadline, request ID), and
their answers are judged with the DRA manager's own rules.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import grpc
from google.protobuf import json_format
from google.protobuf.message import Message

from kubelet_dra.api import dra_v1_pb2
from kubelet_dra.api import pluginregistration_pb2 as registration_pb2
from kubelet_dra.api.calls import message_json
from kubelet_dra.api.goformat import go_status_error
from kubelet_dra.api.services import (
    DRA_HEALTH_V1ALPHA1,
    DRA_SERVICES,
    DRA_V1,
    REGISTRATION,
    HealthResponse,
    PluginType,
    Service,
    negotiate,
    pick_health_service,
)
from kubelet_dra.errors import DriverError, UsageError
from kubelet_dra.kube.client import KubeClient
from kubelet_dra.log import Logger
from kubelet_dra.manager import ClaimError
from kubelet_dra.manager.manager import claim_results
from kubelet_dra.metrics import DRAMetrics
from kubelet_dra.plugins import DEFAULT_CALL_TIMEOUT, CallRecord, CallRecorder, DRAClient
from kubelet_dra.plugins.manager import target_error
from kubelet_dra.plugins.rawcall import call_once
from kubelet_dra.registration.handshake import DEFAULT_TIMEOUTS, why_dial_failed
from kubelet_dra.release import DEFAULT_RELEASE
from kubelet_dra.testbed import objects

GET_INFO = "GetInfo"
NOTIFY = "NotifyRegistrationStatus"
PREPARE = "NodePrepareResources"
UNPREPARE = "NodeUnprepareResources"
WATCH = "NodeWatchResources"
METHODS: dict[str, str] = {
    "info": GET_INFO,
    "notify": NOTIFY,
    "prepare": PREPARE,
    "unprepare": UNPREPARE,
    "watch": WATCH,
}
"""Short names → the methods; the full names are accepted too, in any case."""
KNOWN = (GET_INFO, NOTIFY, PREPARE, UNPREPARE, WATCH)
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


def method_name(text: str) -> str:
    """The method ``text`` names (``prepare``, ``NodePrepareResources``…)."""
    wanted = text.lower()
    for name in KNOWN:
        if wanted == name.lower():
            return name
    if wanted in METHODS:
        return METHODS[wanted]
    raise UsageError(
        f"unknown method {text!r}", fix=f"use one of {', '.join(METHODS)} or their full names ({', '.join(KNOWN)})"
    )


def _service_of(method: str) -> Service:
    if method in (GET_INFO, NOTIFY):
        return REGISTRATION
    return DRA_HEALTH_V1ALPHA1 if method == WATCH else DRA_V1


def request_class(method: str) -> type[Message]:
    service = _service_of(method)
    return service.message_class(service.descriptor.methods_by_name[method].input_type.name)


def _response_class(method: str) -> type[Message]:
    service = _service_of(method)
    return service.message_class(service.descriptor.methods_by_name[method].output_type.name)


def request_from_json(method: str, text: str, where: str) -> Message:
    """The request of ``method`` from protobuf JSON (field names as in the ``.proto`` or camelCase)."""
    message = request_class(method)()
    try:
        json_format.Parse(text or "{}", message)
    except json_format.ParseError as err:
        raise UsageError(
            f"not a {message.DESCRIPTOR.name} in JSON: {' '.join(str(err).split())}",
            where=where,
            fix=f"write the request as JSON, e.g. {json_format.MessageToJson(_example(method), indent=None)}",
        ) from err
    return message


def _example(method: str) -> Message:
    if method in (PREPARE, UNPREPARE):
        claim = dra_v1_pb2.Claim(namespace="default", name="my-claim", uid="<uid>")
        return request_class(method)(claims=[claim])
    if method == NOTIFY:
        return registration_pb2.RegistrationStatus(plugin_registered=False, error="why")
    return request_class(method)()


def parse_claim(text: str) -> tuple[str, str, str]:
    """``NAMESPACE/NAME[/UID]`` → (namespace, name, uid or "")."""
    parts = text.split("/")
    if len(parts) not in (2, 3) or not all(parts):
        raise UsageError(
            f"--claim {text!r} is not NAMESPACE/NAME or NAMESPACE/NAME/UID",
            fix="e.g. --claim default/gpu-claim (its UID is read from the API server) or default/gpu-claim/<uid>",
        )
    namespace, name, uid = (*parts, "")[:3]
    return namespace, name, uid


async def claims_request(method: str, specs: Sequence[str], kube: Callable[[], KubeClient]) -> Message:
    """The prepare or unprepare request for ``specs``; UIDs not given are read from the API server."""
    claims = []
    for spec in specs:
        namespace, name, uid = parse_claim(spec)
        if not uid:
            stored = await objects.get(kube(), "ResourceClaim", name, namespace)
            if stored is None:
                raise UsageError(
                    f"ResourceClaim {namespace}/{name} does not exist on the API server",
                    fix="check the name, or give its UID (NAMESPACE/NAME/UID) to call without one",
                )
            uid = stored["metadata"]["uid"]
        claims.append(dra_v1_pb2.Claim(namespace=namespace, name=name, uid=uid))
    return request_class(method)(claims=claims)


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


@attrs.frozen
class _Route:
    endpoint: str
    service: Service | None
    text: str
    records: tuple[CallRecord, ...] = ()
    refused: str = ""
    driver: str = ""
    versions: tuple[str, ...] = ()
    """What GetInfo advertised (empty for a service socket)."""


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
    route = await _route(socket, options.service, log)
    first = route.records[-1] if route.records else None
    if first is not None and first.status not in ("OK", "UNIMPLEMENTED"):
        notes = await _failure_notes(first, socket, DEFAULT_TIMEOUTS.get_info)
        return HandCall(socket, method, route.records, first.status, notes=notes)
    if route.service is None:
        verdict = f"the kubelet rejects this driver, so it never makes the call: {route.refused}"
        notes = ("pass --service v1.DRAPlugin (or v1beta1.DRAPlugin) to call the service anyway",)
        return HandCall(socket, method, route.records, "OK", verdict, notes, route.text)
    recorder = CallRecorder()
    channel = grpc.aio.insecure_channel(f"unix:{route.endpoint}")
    client = DRAClient(
        driver=route.driver,
        endpoint=route.endpoint,
        channel=channel,
        service=route.service,
        recorder=recorder,
        metrics=DRAMetrics(),
        log=log.with_values(endpoint=route.endpoint),
        call_timeout=timeout,
    )
    try:
        if method == WATCH:
            status, notes = await _watch(client, _health_service(route), options.watch_for, on_message)
            verdict = ""
        else:
            status, verdict = await _claims_call(client, method, request)
    finally:
        await channel.close()
    (record,) = recorder.records()
    if method != WATCH:
        notes = _latency_notes(record, timeout, options)
    if record.status not in ("OK", "CANCELLED"):
        notes = (*notes, *await _failure_notes(record, route.endpoint, timeout))
    return HandCall(socket, method, (*route.records, record), status, verdict, notes, route.text)


async def _registration_call(
    socket: str, method: str, request: Message, timeout: float, options: CallOptions, log: Logger
) -> HandCall:
    response, record = await call_once(
        socket, REGISTRATION.method_path(method), request, _response_class(method), timeout=timeout, log=log
    )
    if response is None:
        return HandCall(socket, method, (record,), record.status, notes=await _failure_notes(record, socket, timeout))
    notes = _latency_notes(record, timeout, options)
    verdict = ""
    if isinstance(response, registration_pb2.PluginInfo):
        service, verdict = _kubelet_choice(socket, response)
        if service is not None:
            endpoint = response.endpoint or socket
            notes = (*notes, f"the kubelet would register {response.name} and call {service.advertised} at {endpoint}")
    return HandCall(socket, method, (record,), "OK", verdict, notes)


def _kubelet_choice(socket: str, info: registration_pb2.PluginInfo) -> tuple[Service | None, str]:
    """(the DRA service the kubelet would call for this GetInfo answer, or ``None`` and why it rejects it)."""
    if info.type != PluginType.DRA:
        return None, f"no handler registered for plugin type: {info.type} (it must be exactly {PluginType.DRA.value!r})"
    endpoint = info.endpoint or socket
    try:
        service = negotiate(info.supported_versions)
    except DriverError as err:
        return None, f"{err.what} (fix: {err.fix})"
    if problem := target_error(f"unix:{endpoint}"):
        return None, f"create gRPC connection to DRA driver {info.name} plugin at endpoint {endpoint}: {problem}"
    return service, ""


async def _route(socket: str, chosen: str, log: Logger) -> _Route:
    """Where a DRA call on ``socket`` goes: the endpoint its GetInfo names, or the socket itself."""
    forced = _chosen_service(chosen) if chosen else None
    info, record = await call_once(
        socket,
        REGISTRATION.method_path(GET_INFO),
        registration_pb2.InfoRequest(),
        registration_pb2.PluginInfo,
        timeout=DEFAULT_TIMEOUTS.get_info,
        log=log,
    )
    if info is None:
        if record.status != "UNIMPLEMENTED":
            return _Route(socket, None, "", (record,))
        service = forced or DRA_V1
        return _Route(socket, service, f"service socket (no GetInfo), {service.advertised}", (record,))
    assert isinstance(info, registration_pb2.PluginInfo)
    endpoint = info.endpoint or socket
    text = f"GetInfo: {info.name} at {endpoint}, advertises {', '.join(info.supported_versions) or 'nothing'}"
    versions = tuple(info.supported_versions)
    if forced is not None:
        text += f"; calling {forced.advertised} as asked"
        return _Route(endpoint, forced, text, (record,), driver=info.name, versions=versions)
    service, refused = _kubelet_choice(socket, info)
    if service is None:
        return _Route(endpoint, None, text, (record,), refused, info.name, versions)
    text += f"; the kubelet picks {service.advertised}"
    return _Route(endpoint, service, text, (record,), driver=info.name, versions=versions)


def _chosen_service(identifier: str) -> Service:
    for service in DRA_SERVICES:
        if identifier in (service.advertised, service.advertised.split(".")[0]):
            return service
    raise UsageError(
        f"--service {identifier!r} is not a DRA service the kubelet calls",
        fix=f"use {' or '.join(service.advertised for service in DRA_SERVICES)}",
    )


async def _claims_call(client: DRAClient, method: str, request: Message) -> tuple[str, str]:
    """(status, verdict) of a prepare or unprepare call, judged as the DRA manager judges the answer."""
    call = client.node_prepare_resources if method == PREPARE else client.node_unprepare_resources
    try:
        response = await call(request)  # type: ignore[arg-type]
    except grpc.aio.AioRpcError as err:
        return err.code().name, ""
    try:
        list(claim_results(method, request.claims, response.claims))  # type: ignore[attr-defined]
    except ClaimError as err:
        return "OK", f"the kubelet fails the pod: {err}"
    return "OK", ""


def _health_service(route: _Route) -> Service:
    """The health service the current kubelet streams from (v1 before v1alpha1, among those advertised); with none
    advertised, v1alpha1, which a 1.36 kubelet calls on every driver."""
    return pick_health_service(route.versions, DEFAULT_RELEASE.health_services) or DRA_HEALTH_V1ALPHA1


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


def _latency_notes(record: CallRecord, deadline: float, options: CallOptions) -> tuple[str, ...]:
    if record.duration < options.latency_warning or not deadline:
        return ()
    share = record.duration / deadline * 100
    return (f"slow: answered in {record.duration:.2f} s, {share:.0f}% of the kubelet's {deadline:g} s deadline",)


async def _failure_notes(record: CallRecord, target: str, deadline: float) -> tuple[str, ...]:
    if record.status == "DEADLINE_EXCEEDED":
        return (f"no answer within {deadline:g} s: the kubelet gives up at the same deadline",)
    if record.status == "UNAVAILABLE":
        return (f"cannot connect to {target}: {await why_dial_failed(target)}",)
    if record.method == REGISTRATION.method_path(NOTIFY) and not record.request.get("plugin_registered"):
        return ("drivers on the kubeletplugin helper answer a rejection with an error; the kubelet only logs it",)
    if record.status == "UNIMPLEMENTED" and record.method == REGISTRATION.method_path(GET_INFO):
        return (f"{target} is no registration socket (those are <driver>-reg.sock in the kubelet's registry dir)",)
    if record.status == "UNIMPLEMENTED":
        return (f"{target} does not serve {record.method}",)
    return ()
