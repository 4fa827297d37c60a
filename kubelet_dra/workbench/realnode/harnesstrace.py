"""The real DRA manager's own words: ``dra-manager-harness``'s trace and results, read into call records.

With ``-trace`` the harness writes one ``TRACE`` line per gRPC call on the wire, as its client made it (method,
gRPC code, message, duration, request and response as protobuf JSON), and one per registration step and log line
of its plugin manager and DRA handler. ``prepare``/``unprepare`` print one ``took=`` line per operation with its
error, and ``prepare`` the CDI devices per container. Read here into what the replay reads from any node: call
records in kubelet-dra's form (``CallRecord``: status names, the JSON of the messages with their defaults), which
drivers are registered and reachable, and each operation's outcome.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Iterable
from typing import Any

import attrs
from google.protobuf import json_format

from kubelet_dra.peers.api.calls import CallRecord, message_json
from kubelet_dra.peers.kubeproto.durations import parse_go_duration
from kubelet_dra.workbench.tap.methods import KNOWN_METHODS

CALL = re.compile(r"^TRACE (?P<time>[\d:.]+) grpc call=(?P<id>\d+) side=client method=(?P<method>\S+) (?P<rest>.*)$")
ENDED = re.compile(r'^code=(?P<code>\w+) msg=(?P<msg>"(?:[^"\\]|\\.)*") took=(?P<took>\S+) req=')
LOG = re.compile(r'^TRACE (?P<time>[\d:.]+) log \[[^\]]*\] "(?P<what>[^"]+)" (?P<fields>.*)$')
FIELD = re.compile(r"(\w+)=(\S+)")
TOOK = re.compile(r"^(?P<operation>PrepareResources|UnprepareResources)\((?P<pod>[^)]+)\) took=\S+ err=(?P<err>.*)$")
CDI = re.compile(r"^CDIDevices\((?P<pod>[^/]+/[^/]+)/(?P<container>[^)]+)\)=\[(?P<ids>[^\]]*)\]$")
REGISTRATION_SERVICE = "/pluginregistration.Registration/"
HEALTH_METHOD = "/NodeWatchResources"
NO_ERROR = "<nil>"
_GO_CODES = {"OK": "OK", "Canceled": "CANCELLED"}
"""Go's names of gRPC codes that are not the CamelCase of gRPC's own (``DeadlineExceeded``: ``DEADLINE_EXCEEDED``)."""


def status_name(code: str) -> str:
    """gRPC's name of a code as Go prints it (``Unimplemented`` → ``UNIMPLEMENTED``)."""
    return _GO_CODES.get(code) or re.sub(r"(?<!^)(?=[A-Z])", "_", code).upper()


def _quoted(text: str) -> str:
    """A Go ``%q`` string's text (JSON's escapes; an escape JSON lacks is kept as written)."""
    try:
        return str(json.loads(text))
    except ValueError:
        return text[1:-1]


def _message(method: str, data: Any, *, response: bool) -> dict[str, Any]:
    """A message as kubelet-dra records it: through its class, so the defaults Go leaves out are shown."""
    shape = KNOWN_METHODS.get(method)
    if shape is None or not isinstance(data, dict):
        return data if isinstance(data, dict) else {}
    message = (shape.response if response else shape.request)()
    return message_json(json_format.ParseDict(data, message, ignore_unknown_fields=True))


@attrs.frozen
class Registration:
    """A driver instance the manager registered: its service endpoint and the service it chose."""

    driver: str
    endpoint: str
    service: str
    connected: bool = False


@attrs.define
class HarnessTrace:
    """One harness process's trace: its calls and the driver instances registered when it ended (or now)."""

    calls: list[CallRecord] = attrs.field(factory=list)
    registrations: dict[str, Registration] = attrs.field(factory=dict)
    """Endpoint → the instance registered there."""
    wiped_at_start: bool = False
    """The start-up wipe of this node's ResourceSlices was done."""


def read_trace(lines: Iterable[str], started: float) -> HarnessTrace:
    """The trace of a process started at ``started`` (wall-clock seconds; the lines carry the time of day only)."""
    trace = HarnessTrace()
    opened: dict[str, float] = {}
    registering = ""
    for line in lines:
        if (log := LOG.match(line)) is not None:
            _logged(trace, log["what"], dict(FIELD.findall(log["fields"])))
            continue
        if (call := CALL.match(line)) is None:
            continue
        when, method, rest = _wall(call["time"], started), call["method"], call["rest"]
        if rest == "stream-open":
            opened[call["id"]] = when
            continue
        ended = ENDED.match(rest)
        if ended is None:
            continue
        took = parse_go_duration(ended["took"]) / 1e9
        request, response = _bodies(rest[ended.end() :])
        if method.endswith("/GetInfo") and isinstance(response, dict):
            registering = str(response.get("endpoint", ""))
        status = status_name(ended["code"])
        registration = method.startswith(REGISTRATION_SERVICE)
        streaming = method.endswith(HEALTH_METHOD)
        trace.calls.append(
            CallRecord(
                request_id=int(call["id"]),
                driver="" if registration else _driver(trace),
                endpoint=registering if registration else _endpoint(trace),
                method=method,
                streaming=streaming,
                request=_message(method, request, response=False),
                response=[] if streaming else _message(method, response, response=True) if status == "OK" else None,
                status=status,
                details=_quoted(ended["msg"]),
                started_at=opened.pop(call["id"], when - took),
                duration=took,
            )
        )
    return trace


def _logged(trace: HarnessTrace, what: str, fields: dict[str, str]) -> None:
    endpoint = fields.get("endpoint", "")
    if what == "Registered DRA plugin":
        trace.registrations[endpoint] = Registration(fields["driverName"], endpoint, fields.get("chosenService", ""))
    elif what == "Unregistered DRA plugin":
        trace.registrations.pop(endpoint, None)
    elif what == "Connection changed" and endpoint in trace.registrations:
        connected = fields.get("connected") == "true"
        trace.registrations[endpoint] = attrs.evolve(trace.registrations[endpoint], connected=connected)
    elif what == "Deleted ResourceSlices":
        trace.wiped_at_start = True


def _driver(trace: HarnessTrace) -> str:
    """The driver of a DRA call: the one the process registered (a by-hand file has one driver)."""
    drivers = {registration.driver for registration in trace.registrations.values()}
    return drivers.pop() if len(drivers) == 1 else ""


def _endpoint(trace: HarnessTrace) -> str:
    endpoints = list(trace.registrations)
    return endpoints[0] if len(endpoints) == 1 else ""


def _bodies(text: str) -> tuple[Any, Any]:
    """``{request} resp={response}`` (the response empty when the call failed)."""
    decoder = json.JSONDecoder()
    try:
        request, end = decoder.raw_decode(text)
    except ValueError:
        return None, None
    rest = text[end:].removeprefix(" resp=")
    try:
        return request, decoder.raw_decode(rest)[0] if rest else None
    except ValueError:
        return request, None


def _wall(time_of_day: str, started: float) -> float:
    """Wall-clock seconds of a time of day printed by a process started at ``started``."""
    start = datetime.datetime.fromtimestamp(started)
    clock = datetime.time.fromisoformat(time_of_day)
    moment = datetime.datetime.combine(start.date(), clock).timestamp()
    return moment + 86400 if moment < started - 3600 else moment


@attrs.frozen
class Outcome:
    """What one ``prepare``/``unprepare`` run printed: the operation's error (empty on success) and, after a
    prepare, the CDI device IDs per container (``NS/POD/CONTAINER``)."""

    error: str | None
    """``None`` when the operation printed no result (the harness failed before it)."""
    cdi: dict[str, list[str]]


def read_outcome(output: str) -> Outcome:
    error: str | None = None
    cdi: dict[str, list[str]] = {}
    for line in output.splitlines():
        if (took := TOOK.match(line.strip())) is not None:
            error = "" if took["err"] == NO_ERROR else took["err"]
        elif (devices := CDI.match(line.strip())) is not None:
            cdi[f"{devices['pod']}/{devices['container']}"] = devices["ids"].split()
    return Outcome(error, cdi)
