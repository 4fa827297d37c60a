"""REG: the registration socket and the handshake (docs/protocol.md).

The node registers the driver as a kubelet does; these checks read what it learnt and then ask the
registration socket themselves, on fresh connections, as the kubelet does at every attempt. They run
even when registration failed, so the one that explains the failure (REG-002) always reports it.
"""

from __future__ import annotations

import os
import re
import stat
import time
from pathlib import Path
from typing import Any

from kubelet_dra.peers.api import pluginregistration_pb2
from kubelet_dra.peers.api.services import REGISTRATION, PluginType, negotiate
from kubelet_dra.peers.errors import DriverError
from kubelet_dra.workbench.conformance import rules
from kubelet_dra.workbench.conformance.checkcontext import CheckContext
from kubelet_dra.workbench.conformance.framework import MUST, SHOULD, check
from kubelet_dra.workbench.conformance.probe import RawCallFailed, get_info, raw_call

GET_INFO_BUDGET = 1.0
"""The kubelet gives GetInfo 1 s."""
NOTIFY_BUDGET = 5.0
"""… and NotifyRegistrationStatus 5 s."""
STABLE_CALLS = 3
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
TAGS = ("registration",)


def _socket(ctx: CheckContext) -> str:
    """The registration socket, or a failure naming why there is none."""
    path = ctx.capabilities.socket_path
    if not path:
        ctx.fail(f"no registration socket: {ctx.capabilities.registration_error or 'none found'}")
    return path


async def _info(ctx: CheckContext, timeout: float = GET_INFO_BUDGET) -> Any:
    """GetInfo on the registration socket within the kubelet's budget; a failure says what the kubelet would see."""
    try:
        return await get_info(ctx.bed, _socket(ctx), driver=ctx.driver_name, timeout=timeout)
    except RawCallFailed as err:
        ctx.fail(f"GetInfo failed: {err} (the kubelet logs 'failed to get plugin info using RPC GetInfo')")


@check(
    "REG-001",
    "registration socket is a Unix socket directly in the registry dir, name not starting with '.'",
    tags=TAGS,
    level=MUST,
    why="the kubelet never sees a socket elsewhere or dot-named (F1)",
    rule=rules.WATCHED_SOCKET,
    reference=rules.cite(
        rules.protocol("driver-contract", "C1"), rules.protocol("failure-modes", "F1"), rules.PLUGIN_WATCHER_GO
    ),
)
async def registration_socket(ctx: CheckContext) -> None:
    path = Path(_socket(ctx))
    registry = ctx.bed.registry_dir.resolve()
    ctx.expect(
        path.resolve().parent == registry or registry in path.resolve().parents,
        f"{path} is not in the registry dir {registry}",
    )
    ctx.expect(not path.name.startswith("."), f"{path.name} starts with '.': the kubelet ignores it")
    try:
        mode = os.stat(path).st_mode
    except OSError as err:
        ctx.fail(f"cannot stat {path}: {err.strerror}")
    ctx.expect(stat.S_ISSOCK(mode), f"{path} is not a Unix socket")


@check(
    "REG-002",
    "the node registers the driver and connects to its service",
    tags=TAGS,
    level=MUST,
    why="registration is the entry to everything else",
    rule=rules.REGISTERED,
    reference=rules.cite(rules.protocol("driver-contract", "C2–C6"), rules.protocol("failure-modes", "F1–F10")),
)
async def node_registers(ctx: CheckContext) -> None:
    ctx.require_registered()
    ctx.expect(ctx.bed.node.plugins.usable(ctx.driver_name), f"the node has no connected instance of {ctx.driver_name}")


@check(
    "REG-003",
    "GetInfo answers within 1 s",
    tags=TAGS,
    level=MUST,
    why="the kubelet's 1 s GetInfo deadline (F3)",
    rule=rules.GET_INFO_TIMEOUT,
    reference=rules.cite(rules.protocol("driver-contract", "C2"), rules.protocol("failure-modes", "F3")),
)
async def get_info_in_time(ctx: CheckContext) -> None:
    _, seconds = await ctx.timed(_info(ctx, timeout=GET_INFO_BUDGET + 1))
    ctx.expect(
        seconds <= GET_INFO_BUDGET,
        f"GetInfo took {seconds:.2f} s; the kubelet gives up after {GET_INFO_BUDGET:g} s (DeadlineExceeded)",
    )


@check(
    "REG-004",
    'GetInfo reports type "DRAPlugin"',
    tags=TAGS,
    level=MUST,
    why="any other type never reaches the DRA handler (F4)",
    rule=rules.PLUGIN_TYPE,
    reference=rules.cite(rules.protocol("driver-contract", "C2"), rules.protocol("failure-modes", "F4")),
)
async def get_info_type(ctx: CheckContext) -> None:
    info = await _info(ctx)
    ctx.expect(
        info.type == PluginType.DRA.value,
        f"GetInfo type is {info.type!r}; the kubelet's DRA handler never sees it (it must be exactly 'DRAPlugin')",
    )


@check(
    "REG-005",
    "GetInfo names the driver: a non-empty DNS subdomain, the name the suite was given",
    tags=TAGS,
    level=MUST,
    why="claims name the driver; an empty or other name is never found (F12)",
    rule=rules.PLUGIN_NAME,
    reference=rules.cite(rules.protocol("driver-contract", "C2"), rules.REGISTRATION_API),
)
async def get_info_name(ctx: CheckContext) -> None:
    info = await _info(ctx)
    ctx.expect(info.name, "GetInfo returned an empty name")
    ctx.expect(
        len(info.name) <= 253 and DNS_SUBDOMAIN.match(info.name),
        f"driver name {info.name!r} is not a DNS subdomain (ResourceSlices and DeviceClasses would reject it)",
    )
    ctx.expect(
        info.name == ctx.driver_name, f"GetInfo names {info.name!r}, but the driver under test is {ctx.driver_name!r}"
    )


@check(
    "REG-006",
    "supported_versions lists v1.DRAPlugin or v1beta1.DRAPlugin",
    tags=(*TAGS, "versions"),
    level=MUST,
    why="no supported service: refused (F5, F6)",
    rule=rules.SUPPORTED_VERSIONS,
    reference=rules.cite(
        rules.protocol("driver-contract", "C3"), rules.protocol("failure-modes", "F5–F6"), rules.REGISTRATION_API
    ),
)
async def supported_versions(ctx: CheckContext) -> None:
    info = await _info(ctx)
    try:
        negotiate(list(info.supported_versions))
    except DriverError as err:
        ctx.fail(f"a 1.36 kubelet rejects the driver: {err.what} ({err.fix})")


@check(
    "REG-007",
    "GetInfo endpoint is an absolute path to an existing Unix socket",
    tags=TAGS,
    level=MUST,
    why="the kubelet dials this path on the host; a wrong one wipes the slices 30 s later (F10)",
    rule=rules.ENDPOINT,
    reference=rules.cite(
        rules.protocol("driver-contract", "C4"), rules.protocol("failure-modes", "F8", "F10"), rules.REGISTRATION_API
    ),
)
async def endpoint_path(ctx: CheckContext) -> None:
    info = await _info(ctx)
    endpoint = info.endpoint
    ctx.expect(endpoint, "GetInfo returned an empty endpoint")
    ctx.expect(os.path.isabs(endpoint), f"endpoint {endpoint!r} is not an absolute path")
    try:
        mode = os.stat(endpoint).st_mode
    except OSError as err:
        ctx.fail(
            f"endpoint {endpoint} does not exist on the host: {err.strerror} (kubelet wipes the slices after 30 s)"
        )
    ctx.expect(stat.S_ISSOCK(mode), f"endpoint {endpoint} is not a Unix socket")


@check(
    "REG-008",
    "NotifyRegistrationStatus(true) is accepted without an error within 5 s",
    tags=TAGS,
    level=MUST,
    why="a failing NotifyRegistrationStatus(true) deregisters the driver again (F9)",
    rule=rules.NOTIFY_TRUE,
    reference=rules.cite(rules.protocol("driver-contract", "C6"), rules.protocol("failure-modes", "F9")),
)
async def notify_true(ctx: CheckContext) -> None:
    request = pluginregistration_pb2.RegistrationStatus(plugin_registered=True)
    try:
        _, seconds = await ctx.timed(_notify(ctx, request, NOTIFY_BUDGET + 1))
    except RawCallFailed as err:
        ctx.fail(f"NotifyRegistrationStatus(true) failed: {err}; the kubelet deregisters the driver and retries")
    ctx.expect(seconds <= NOTIFY_BUDGET, f"NotifyRegistrationStatus took {seconds:.2f} s (budget {NOTIFY_BUDGET:g} s)")


async def _notify(ctx: CheckContext, request: Any, timeout: float) -> Any:
    return await raw_call(
        ctx.bed,
        _socket(ctx),
        REGISTRATION.method_path("NotifyRegistrationStatus"),
        request,
        pluginregistration_pb2.RegistrationStatusResponse,
        driver=ctx.driver_name,
        timeout=timeout,
    )


@check(
    "REG-009",
    "NotifyRegistrationStatus(false) is answered and the driver keeps serving",
    tags=TAGS,
    level=SHOULD,
    why="should: the kubelet retries a refused driver anyway; keeping serving only helps the retry",
    rule=rules.NOTIFY_FALSE,
    reference=rules.cite(
        rules.protocol("registration"),
        rules.protocol("failure-modes", "F4–F6"),
        rules.OPERATION_GENERATOR_GO,
        rules.REGISTRATION_API,
    ),
)
async def notify_false(ctx: CheckContext) -> None:
    ctx.require_registered()
    request = pluginregistration_pb2.RegistrationStatus(
        plugin_registered=False, error="conformance check REG-009: a rejection the driver must survive"
    )
    try:
        await _notify(ctx, request, NOTIFY_BUDGET)
    except RawCallFailed as err:
        if err.code.name in ("DEADLINE_EXCEEDED", "UNAVAILABLE"):
            ctx.fail(f"NotifyRegistrationStatus(false) was not answered: {err}")
        # answering a rejection with an error is what the kubelet's helper library does too
    if ctx.driver is not None:
        ctx.expect(ctx.driver.running, f"the driver exited after a rejection (code {ctx.driver.returncode})")
    info = await _info(ctx)
    ctx.expect(info.name == ctx.driver_name, "GetInfo answers differently after a rejection")
    ctx.expect(Path(_socket(ctx)).exists(), "the registration socket was removed after a rejection")
    ctx.expect(ctx.bed.node.plugins.usable(ctx.driver_name), "the node lost its connection after the rejection")


@check(
    "REG-010",
    "GetInfo answers the same on fresh connections and matches what the node registered",
    tags=TAGS,
    level=MUST,
    why="the kubelet registers the driver again at every start and trusts that answer",
    rule=rules.REREGISTRATION,
    reference=rules.cite(
        rules.protocol("registration"), rules.protocol("driver-contract", "C17"), rules.OPERATION_GENERATOR_GO
    ),
)
async def get_info_stable(ctx: CheckContext) -> None:
    ctx.require_registered()
    answers = [await _info(ctx) for _ in range(STABLE_CALLS)]
    seen = {(a.type, a.name, a.endpoint, tuple(a.supported_versions)) for a in answers}
    ctx.expect(len(seen) == 1, f"GetInfo answered differently on {STABLE_CALLS} connections: {sorted(seen)}")
    endpoints = [instance.endpoint for instance in ctx.bed.node.instances(ctx.driver_name)]
    ctx.expect(
        answers[0].endpoint in endpoints,
        f"GetInfo now reports endpoint {answers[0].endpoint}, the node registered {endpoints}",
    )


@check(
    "REG-011",
    "one registration socket and one service endpoint per driver instance",
    tags=TAGS,
    level=SHOULD,
    why="should: the kubelet refuses the second socket for one endpoint (F7) and keeps the first",
    rule=rules.ONE_SOCKET_PER_INSTANCE,
    reference=rules.cite(rules.protocol("failure-modes", "F7", "F20")),
)
async def one_instance(ctx: CheckContext) -> None:
    ctx.require_registered()
    sockets = [s.socket_path for s in ctx.bed.node.registrations() if s.name == ctx.driver_name]
    ctx.expect(len(sockets) == 1, f"{len(sockets)} registration sockets name {ctx.driver_name}: {sockets}")
    instances = ctx.bed.node.instances(ctx.driver_name)
    ctx.expect(len(instances) == 1, f"the node holds {len(instances)} instances of {ctx.driver_name}")
    ctx.expect(
        instances[0].endpoint != sockets[0], "the service endpoint is the registration socket itself; use two sockets"
    )


@check(
    "REG-012",
    "the registration socket answers an unknown method with UNIMPLEMENTED, promptly",
    tags=TAGS,
    level=SHOULD,
    why="should: gRPC convention; the kubelet calls no unknown method",
    rule=rules.GRPC_UNIMPLEMENTED,
    reference=rules.cite(rules.protocol("registration"), rules.OPERATION_GENERATOR_GO, rules.GRPC_STATUS),
)
async def unknown_registration_method(ctx: CheckContext) -> None:
    started = time.monotonic()
    try:
        await raw_call(
            ctx.bed,
            _socket(ctx),
            f"/{REGISTRATION.wire_name}/NoSuchMethod",
            pluginregistration_pb2.InfoRequest(),
            pluginregistration_pb2.PluginInfo,
            driver=ctx.driver_name,
            timeout=GET_INFO_BUDGET * 2,
        )
    except RawCallFailed as err:
        ctx.expect(err.code.name == "UNIMPLEMENTED", f"an unknown method answered {err}, expected UNIMPLEMENTED")
    else:
        ctx.fail("an unknown method on the registration service answered OK")
    ctx.expect(time.monotonic() - started <= GET_INFO_BUDGET, "the unknown method took longer than 1 s to answer")
