"""The capability probe and raw gRPC calls: what the suite learns about the driver before any check runs.

The simulated node registers the driver exactly as a kubelet does, so the probe reads what the node
learnt (its registrations, diagnoses and plugin instances) instead of doing the handshake a second
time. Checks that need to see the wire themselves (GetInfo again, a service under another name)
use ``raw_call``, which records its calls in the node's recorder so a failed check reports them
together with the node's own calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Iterable
from pathlib import Path

import grpc
from google.protobuf.message import Message

from kubelet_dra.kubelet.pluginmanager.diagnosis import Diagnosis
from kubelet_dra.kubelet.pluginmanager.operationexecutor.operation_generator import DEFAULT_TIMEOUTS
from kubelet_dra.kubelet.pluginmanager.plugin_manager import SocketPhase
from kubelet_dra.kubelet.release import DEFAULT_RELEASE
from kubelet_dra.peers.api import pluginregistration_pb2
from kubelet_dra.peers.api.calls import CallRecord
from kubelet_dra.peers.api.services import HEALTH_SERVICES, REGISTRATION, Service
from kubelet_dra.peers.driver.settings import CONTROL_SOCKET
from kubelet_dra.peers.errors import UsageError
from kubelet_dra.peers.log import get_logger
from kubelet_dra.workbench.call.rawcall import call_once
from kubelet_dra.workbench.conformance.checkcontext import Capabilities
from kubelet_dra.workbench.testbed import DriverProcess, Testbed

_log = get_logger("conformance")
RAW_TIMEOUT = 5.0
POLL = 0.05
RETRY_GRACE = 1.6
"""After a failed registration attempt the node retries after 0.5 s, then 1 s: a driver that was not quite
ready registers within this grace; one that is broken is reported with the latest diagnosis after it."""


class RawCallFailed(Exception):
    """A raw call ended with a gRPC error; ``code`` is the status, ``str()`` the details."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


async def raw_call(
    bed: Testbed,
    target: str,
    method_path: str,
    request: Message,
    response_class: type[Message],
    *,
    driver: str = "",
    timeout: float = RAW_TIMEOUT,
) -> Message:
    """One unary call to ``method_path`` on the Unix socket ``target``, on a fresh connection, recorded.

    The method path is taken as given, so a check can call a service under any name; ``RawCallFailed``
    carries the status of a failed call.
    """
    response, record = await call_once(
        target, method_path, request, response_class, timeout=timeout, log=_log, driver=driver
    )
    if bed.node_running:
        bed.node.recorder.add(record)
    if response is None:
        raise RawCallFailed(grpc.StatusCode[record.status], record.details)
    return response


async def get_info(
    bed: Testbed, socket_path: str, *, driver: str = "", timeout: float = RAW_TIMEOUT
) -> pluginregistration_pb2.PluginInfo:
    """``GetInfo`` on a registration socket, as the kubelet asks it."""
    info = await raw_call(
        bed,
        socket_path,
        REGISTRATION.method_path("GetInfo"),
        pluginregistration_pb2.InfoRequest(),
        pluginregistration_pb2.PluginInfo,
        driver=driver,
        timeout=timeout,
    )
    assert isinstance(info, pluginregistration_pb2.PluginInfo)
    return info


class Probe:
    """Wait until the node registered the driver (or gave up on it) and collect its capabilities."""

    def __init__(self, bed: Testbed, driver: DriverProcess | None, driver_name: str | None, timeout: float) -> None:
        self.bed = bed
        self.driver = driver
        self.driver_name = driver_name
        self.timeout = timeout

    async def run(self) -> Capabilities:
        """What the driver offers; ``registration_error`` says why the node could not register it, if it could not."""
        deadline = time.monotonic() + self.timeout
        name, socket_path, problem = "", "", ""
        failing_since: float | None = None
        while True:
            name, socket_path, problem = self._look()
            if name and self.bed.node.plugins.usable(name):
                break
            if name and (unreachable := self._relative_endpoint(name)):
                problem = unreachable
                break
            if problem:
                failing_since = failing_since or time.monotonic()
                if time.monotonic() - failing_since >= RETRY_GRACE:
                    break
            if self.driver is not None and not self.driver.running:
                problem = f"the driver exited with code {self.driver.returncode}{self._log_tail()}"
                break
            if time.monotonic() >= deadline:
                problem = problem or self._timeout_reason(name, socket_path)
                break
            await asyncio.sleep(POLL)
        versions: tuple[str, ...] = ()
        if socket_path:
            with contextlib.suppress(RawCallFailed):
                info = await get_info(self.bed, socket_path, driver=name or self.driver_name or "")
                versions = tuple(info.supported_versions)
                name = name or info.name
        name = name or self.driver_name or ""
        instances = self.bed.node.instances(name) if name and not problem else []
        return Capabilities(
            driver_name=name,
            endpoint=instances[0].endpoint if instances else "",
            versions=versions,
            chosen_service=instances[0].chosen_service if instances else "",
            health_services=advertised_health(versions) if not problem else (),
            can_restart=self.driver is not None,
            embedded=self.bed.embedded,
            reference=await self._is_reference(),
            socket_path=socket_path,
            registration_error=problem,
        )

    def _look(self) -> tuple[str, str, str]:
        """(driver name, registration socket, why registration failed) as the node sees them now."""
        states = self.bed.node.registrations()
        if self.driver_name is not None:
            registered = [s for s in states if s.phase == SocketPhase.REGISTERED and s.name == self.driver_name]
            others = sorted({s.name for s in states if s.phase == SocketPhase.REGISTERED} - {self.driver_name})
            if not registered and others and self.driver is not None:
                path = next(s.socket_path for s in states if s.name == others[0])
                return "", path, f"the driver registered as {others[0]!r}, not as {self.driver_name!r} (--driver-name)"
        else:
            registered = [s for s in states if s.phase == SocketPhase.REGISTERED]
            names = sorted({s.name for s in registered})
            if len(names) > 1 and self.driver is None:
                raise UsageError(
                    f"several drivers are registered in {self.bed.registry_dir}: {', '.join(names)}",
                    fix="choose one with --driver-name",
                )
        if registered:
            return registered[0].name, registered[0].socket_path, ""
        diagnoses = self.bed.node.diagnoses()
        if diagnoses and (self.driver is not None or len(states) == 1):
            path, diagnosis = sorted(diagnoses.items())[0]
            return "", path, describe(diagnosis)
        return "", states[0].socket_path if len(states) == 1 else "", ""

    def _relative_endpoint(self, name: str) -> str:
        """Why the node can never connect to ``name``: its endpoint is not an absolute path; ``""`` otherwise."""
        instances = self.bed.node.instances(name)
        if not instances or os.path.isabs(instances[0].endpoint):
            return ""
        return (
            f"{name} registered with service endpoint {instances[0].endpoint!r}, not an absolute path: the kubelet"
            " cannot connect to it (docs/protocol.md#driver-contract C4)"
        )

    def _timeout_reason(self, name: str, socket_path: str) -> str:
        if name:
            instances = self.bed.node.instances(name)
            endpoint = instances[0].endpoint if instances else "?"
            return (
                f"{name} registered, but its service endpoint {endpoint} accepted no gRPC connection within"
                f" {self.timeout:g} s (docs/protocol.md#driver-contract C4: the kubelet wipes its ResourceSlices"
                f" after 30 s){self._log_tail()}"
            )
        if socket_path:
            return f"the node did not register {socket_path} within {self.timeout:g} s{self._log_tail()}"
        return f"no registration socket appeared in {self.bed.registry_dir} within {self.timeout:g} s{self._log_tail()}"

    def _log_tail(self) -> str:
        tail = self.driver.log_tail(5).replace("\n", " | ") if self.driver is not None else ""
        return f"; driver log: {tail}" if tail else ""

    async def _is_reference(self) -> bool:
        """The bundled reference driver answers on its control socket; other drivers have none."""
        if self.driver is None or not (Path(self.driver.plugin_dir) / CONTROL_SOCKET).exists():
            return False
        try:
            await self.driver.status()
        except Exception:  # any failure means: no usable control socket
            return False
        return True


def describe(diagnosis: Diagnosis) -> str:
    """A diagnosis in one line: failure mode, cause, the kubelet's words and the fix."""
    return f"{diagnosis.id} {diagnosis.symptom}: {diagnosis.cause} (kubelet: {diagnosis.message}; fix: {diagnosis.fix})"


def service_for(identifier: str, services: tuple[Service, ...]) -> Service | None:
    """The service a driver means by the advertised ``identifier`` (``None`` when none of ``services``)."""
    return next((s for s in services if identifier in (s.advertised, *s.also_advertised_as)), None)


def advertised_health(versions: tuple[str, ...]) -> tuple[Service, ...]:
    """The health services among ``versions``, in the order a 1.37 kubelet prefers them."""
    return tuple(HEALTH_SERVICES[name] for name in DEFAULT_RELEASE.health_services if name in versions)


REGISTERED, IN_FLIGHT, NOT_REGISTERED = "registered", "in flight", "not registered"


def registration_seen(records: Iterable[CallRecord], driver_name: str | None) -> str:
    """What the node's call record says of the driver's registration since it started, gone or not (a driver that
    exits right after registering did start): ``REGISTERED`` once the node told a socket whose last GetInfo named
    the driver (any name, when none was given) that it registered; ``IN_FLIGHT`` while such a socket's notification
    has not ended yet (a record is added when its call ends, and a driver that exits as it answers may be seen gone
    first)."""
    waiting: set[str] = set()
    for record in records:
        if record.method == REGISTRATION.method_path("GetInfo") and record.status == "OK":
            if not driver_name or (record.response or {}).get("name") == driver_name:
                waiting.add(record.endpoint)
            else:
                waiting.discard(record.endpoint)
        elif record.method == REGISTRATION.method_path("NotifyRegistrationStatus") and record.endpoint in waiting:
            if record.request.get("plugin_registered"):
                return REGISTERED
            waiting.discard(record.endpoint)
    return IN_FLIGHT if waiting else NOT_REGISTERED


def ever_registered(records: Iterable[CallRecord], driver_name: str) -> bool:
    """Whether the node accepted a registration of the driver since it started (``registration_seen``)."""
    return registration_seen(records, driver_name) == REGISTERED


async def registered_once(bed: Testbed, driver_name: str | None) -> bool:
    """Whether the node ever registered the driver, waiting out a notification still in flight (at most its
    timeout): a driver that exits as it answers it is often seen gone before the node's call ends."""
    deadline = time.monotonic() + DEFAULT_TIMEOUTS.notify + 1
    while (seen := registration_seen(bed.node.recorder.records(), driver_name)) == IN_FLIGHT:
        if time.monotonic() >= deadline:
            break
        await asyncio.sleep(POLL)
    return seen == REGISTERED
