"""VER: the advertised services are the ones served, under their wire names (docs/protocol.md).

A driver advertises ``v1.DRAPlugin`` but must serve ``k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin``;
the two names differ, and a driver that mixes them up registers fine and then fails every call
(F11). These checks call each advertised service on the endpoint by its wire name, on fresh
connections, with the messages of that API version.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc

from kubelet_dra.peers.api.services import (
    DRA_HEALTH_V1,
    DRA_HEALTH_V1ALPHA1,
    DRA_SERVICES,
    Service,
    full_method,
    negotiate,
)
from kubelet_dra.workbench.conformance import rules
from kubelet_dra.workbench.conformance.checkcontext import CheckContext, claim_ref
from kubelet_dra.workbench.conformance.framework import HEALTH, MUST, SHOULD, check
from kubelet_dra.workbench.conformance.probe import RawCallFailed, raw_call, service_for

TAGS = ("versions",)
CONNECTION_CALLS = 5
CALL_BUDGET = 45.0
"""The kubelet gives every NodePrepare/NodeUnprepareResources call 45 s."""
HEALTH_FIRST_MESSAGE = 5.0
"""How long the first message of the health stream may take (the kubelet times devices out after 30 s)."""


def _advertised(ctx: CheckContext) -> list[Service]:
    """The DRA node services the driver advertises, in its order (fails when there is none)."""
    ctx.require_registered()
    services = [s for s in (service_for(i, DRA_SERVICES) for i in ctx.capabilities.versions) if s is not None]
    ctx.expect(services, f"no DRA node service among the advertised {list(ctx.capabilities.versions)}")
    return list(dict.fromkeys(services))


async def _call(ctx: CheckContext, service: Service, method: str, request: Any, *, path: str = "") -> Any:
    return await raw_call(
        ctx.bed,
        ctx.capabilities.endpoint,
        path or service.method_path(method),
        request,
        service.message_class(f"{method}Response"),
        driver=ctx.driver_name,
        timeout=CALL_BUDGET,
    )


def _empty(service: Service, method: str) -> Any:
    return service.message_class(f"{method}Request")()


@check(
    "VER-001",
    "every advertised DRA service answers NodePrepare/NodeUnprepareResources under its wire name",
    tags=TAGS,
    level=MUST,
    why="an advertised service is a promise another kubelet may pick (F11)",
    rule=rules.WIRE_NAME,
    reference=rules.cite(
        rules.protocol("driver-contract", "C5"),
        rules.protocol("grpc-api"),
        rules.protocol("failure-modes", "F11"),
        rules.DRA_API,
    ),
)
async def wire_names(ctx: CheckContext) -> None:
    for service in _advertised(ctx):
        for method in ("NodePrepareResources", "NodeUnprepareResources"):
            try:
                await _call(ctx, service, method, _empty(service, method))
            except RawCallFailed as err:
                ctx.fail(
                    f"{service.advertised} is advertised, but {service.method_path(method)} answered {err}"
                    + (
                        f": register the service as {service.wire_name}, not under another name"
                        if err.code == grpc.StatusCode.UNIMPLEMENTED
                        else ""
                    )
                )


@check(
    "VER-002",
    "every advertised DRA service prepares a claim with its allocated devices, the same through each version",
    tags=(*TAGS, "prepare"),
    level=MUST,
    why="kubelets of different releases pick different versions: each must prepare alike",
    rule=rules.SUPPORTED_VERSIONS,
    reference=rules.cite(
        rules.protocol("dra-plugin-manager"),
        rules.protocol("grpc-api"),
        rules.protocol("driver-contract", "C3"),
        rules.DRA_PLUGIN_MANAGER_GO,
        rules.DRA_API,
        rules.REGISTRATION_API,
    ),
)
async def each_version_prepares(ctx: CheckContext) -> None:
    services = _advertised(ctx)
    claim = await ctx.allocated_claim(1)
    uid = claim["metadata"]["uid"]
    allocated = {
        (r["pool"], r["device"])
        for r in claim["status"]["allocation"]["devices"]["results"]
        if r["driver"] == ctx.driver_name
    }
    answers: dict[str, set[tuple[str, str, tuple[str, ...]]]] = {}
    for service in services:
        ref = claim_ref(claim)
        request = service.message_class("NodePrepareResourcesRequest")(
            claims=[service.message_class("Claim")(namespace=ref.namespace, name=ref.name, uid=ref.uid)]
        )
        try:
            response = await _call(ctx, service, "NodePrepareResources", request)
        except RawCallFailed as err:
            ctx.fail(f"NodePrepareResources through {service.advertised} failed: {err}")
        result = response.claims.get(uid)
        ctx.expect(result is not None, f"{service.advertised}: the answer has no entry for claim UID {uid}")
        ctx.expect(not result.error, f"{service.advertised}: preparing the claim failed: {result.error}")
        devices = {(d.pool_name, d.device_name, tuple(d.cdi_device_ids)) for d in result.devices}
        ctx.expect(
            {(pool, device) for pool, device, _ in devices} == allocated,
            f"{service.advertised} prepared {sorted(devices)}, the claim was allocated {sorted(allocated)}",
        )
        answers[service.advertised] = devices
    ctx.expect(len({frozenset(a) for a in answers.values()}) == 1, f"the versions answer differently: {answers}")


@check(
    "VER-003",
    "the advertised identifier is not served as a gRPC service name (UNIMPLEMENTED)",
    tags=TAGS,
    level=SHOULD,
    why="should: a hint that the service is registered under the wrong package; VER-001 judges the effect",
    rule=rules.WIRE_NAME,
    reference=rules.cite(rules.protocol("grpc-api"), rules.protocol("failure-modes", "F11"), rules.DRA_API),
)
async def identifier_is_not_a_service(ctx: CheckContext) -> None:
    for service in _advertised(ctx):
        path = full_method(service.advertised, "NodePrepareResources")
        try:
            await _call(ctx, service, "NodePrepareResources", _empty(service, "NodePrepareResources"), path=path)
        except RawCallFailed as err:
            ctx.expect(err.code == grpc.StatusCode.UNIMPLEMENTED, f"{path} answered {err}, expected UNIMPLEMENTED")
        else:
            ctx.fail(
                f"the driver serves {path}: it registered its service under the advertised identifier;"
                f" the kubelet calls {service.method_path('NodePrepareResources')}"
            )


@check(
    "VER-004",
    "supported_versions lists each identifier once, and no wire service names",
    tags=(*TAGS, "registration"),
    level=SHOULD,
    why="should: the kubelet skips duplicates and unknown entries",
    rule=rules.IDENTIFIERS,
    reference=rules.cite(
        rules.protocol("dra-plugin-manager"),
        rules.protocol("grpc-api"),
        rules.protocol("failure-modes", "F6"),
        rules.DRA_PLUGIN_MANAGER_GO,
        rules.DRA_API,
    ),
)
async def identifiers_well_formed(ctx: CheckContext) -> None:
    versions = list(ctx.capabilities.versions)
    ctx.expect(versions, f"no supported_versions known: {ctx.capabilities.registration_error or 'GetInfo listed none'}")
    duplicates = sorted({v for v in versions if versions.count(v) > 1})
    ctx.expect(not duplicates, f"listed more than once: {duplicates}")
    wire = {s.wire_name: s for s in (*DRA_SERVICES, DRA_HEALTH_V1ALPHA1)}
    mistaken = [v for v in versions if v in wire and wire[v].advertised != v]
    ctx.expect(
        not mistaken, f"{mistaken} are wire service names; advertise {[wire[v].advertised for v in mistaken]} instead"
    )


@check(
    "VER-005",
    "the service the kubelet picks (the first listed) serves the node's connection made at registration",
    tags=TAGS,
    level=MUST,
    why="the kubelet uses the first supported entry over the connection made at registration",
    rule=rules.FIRST_SUPPORTED,
    reference=rules.cite(
        rules.protocol("dra-plugin-manager"),
        rules.protocol("driver-contract", "C3"),
        rules.protocol("failure-modes", "F11"),
        rules.DRA_PLUGIN_MANAGER_GO,
        rules.DRA_PLUGIN_GO,
    ),
)
async def negotiated(ctx: CheckContext) -> None:
    ctx.require_registered()
    picked = negotiate(list(ctx.capabilities.versions))
    try:
        await ctx.unprepare()
    except grpc.aio.AioRpcError as err:
        ctx.expect(
            err.code() != grpc.StatusCode.UNIMPLEMENTED,
            f"the node's call to {picked.wire_name} (the kubelet picks {picked.advertised}, listed first)"
            f" answered UNIMPLEMENTED: {err.details()}",
        )
        # any other error is the concern of the unprepare checks: the service itself answered
    used = {record.method for record in ctx.calls("NodeUnprepareResources")}
    ctx.expect(used == {picked.method_path("NodeUnprepareResources")}, f"the node called {sorted(used)}")


@check(
    "VER-006",
    "an unknown method of the DRA service answers UNIMPLEMENTED",
    tags=TAGS,
    level=SHOULD,
    why="should: gRPC convention; the kubelet calls no unknown method",
    rule=rules.GRPC_UNIMPLEMENTED,
    reference=rules.cite(rules.protocol("grpc-api"), rules.DRA_API, rules.GRPC_STATUS),
)
async def unknown_method(ctx: CheckContext) -> None:
    service = _advertised(ctx)[0]
    path = full_method(service.wire_name, "NodeNoSuchMethod")
    try:
        await _call(ctx, service, "NodePrepareResources", _empty(service, "NodePrepareResources"), path=path)
    except RawCallFailed as err:
        ctx.expect(err.code == grpc.StatusCode.UNIMPLEMENTED, f"{path} answered {err}, expected UNIMPLEMENTED")
    else:
        ctx.fail(f"{path} answered OK")


@check(
    "VER-007",
    "one connection to the endpoint carries many calls",
    tags=TAGS,
    level=MUST,
    why="the kubelet sends every call over one connection per instance",
    rule=rules.FIRST_SUPPORTED,
    reference=rules.cite(rules.protocol("dra-plugin-manager"), rules.DRA_PLUGIN_GO),
)
async def one_connection(ctx: CheckContext) -> None:
    service = _advertised(ctx)[0]
    channel = grpc.aio.insecure_channel(f"unix:{ctx.capabilities.endpoint}")
    try:
        stub = service.stub(channel)
        for index in range(CONNECTION_CALLS):
            try:
                await stub.NodeUnprepareResources(_empty(service, "NodeUnprepareResources"), timeout=CALL_BUDGET)
            except grpc.aio.AioRpcError as err:
                ctx.fail(f"call {index + 1} of {CONNECTION_CALLS} on one connection failed: {err.code().name}")
    finally:
        await channel.close()


@check(
    "VER-008",
    "every advertised health service streams under its wire name",
    tags=(*TAGS, "health"),
    level=MUST,
    why="an advertised health service the kubelet opens must answer; else it logs errors every 5 s (F13)",
    rule=rules.HEALTH_WIRE_NAME,
    reference=rules.cite(
        rules.protocol("device-health"),
        rules.protocol("driver-contract", "C14"),
        rules.RELEASES,
        rules.HEALTH_INFO_GO,
        rules.HEALTH_API,
    ),
    needs=(HEALTH,),
)
async def health_wire_name(ctx: CheckContext) -> None:
    services = ctx.capabilities.health_services
    if DRA_HEALTH_V1 not in services:
        ctx.warn(
            f"only {DRA_HEALTH_V1ALPHA1.advertised} is advertised: deprecated in 1.37 and to be removed in 1.40;"
            f" advertise {DRA_HEALTH_V1.advertised} too (the 1.37 kubeletplugin helper serves and advertises both)"
        )
    channel = grpc.aio.insecure_channel(f"unix:{ctx.capabilities.endpoint}")
    try:
        for service in services:
            call = service.stub(channel).NodeWatchResources(service.message_class("NodeWatchResourcesRequest")())
            try:
                first = await asyncio.wait_for(call.read(), HEALTH_FIRST_MESSAGE)
            except grpc.aio.AioRpcError as err:
                ctx.fail(f"{service.method_path('NodeWatchResources')} failed: {err.code().name} {err.details()}")
            except TimeoutError:
                ctx.fail(f"the {service.advertised} stream sent nothing within {HEALTH_FIRST_MESSAGE:g} s")
            ctx.expect(first is not grpc.aio.EOF, f"the {service.advertised} stream ended without a message")
            call.cancel()
    finally:
        await channel.close()
