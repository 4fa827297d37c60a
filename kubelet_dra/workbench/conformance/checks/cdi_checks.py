"""CDI: the CDI device IDs a driver returns and the spec files behind them (docs/protocol.md).

The kubelet passes the IDs to the container runtime unchanged; the runtime accepts only fully
qualified ``vendor/class=name`` IDs and fails the container when an ID is declared in no spec file
under its CDI roots. So every ID must resolve as soon as NodePrepareResources returns, again after
an unprepare and a new prepare, to the same edits each time; a container whose devices contradict
each other gets a warning.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubelet_dra.workbench.conformance import rules
from kubelet_dra.workbench.conformance.checkcontext import CheckContext
from kubelet_dra.workbench.conformance.framework import MUST, SHOULD, check
from kubelet_dra.workbench.conformance.steps.claimsteps import prepared, require_claims, require_devices, unprepared
from kubelet_dra.workbench.testbed.cdispecs import (
    CDIResolutionError,
    ContainerEdits,
    ResolvedDevice,
    scan,
    valid_cdi_id,
)

TAGS = ("cdi",)


async def prepared_ids(ctx: CheckContext, *claims: Mapping[str, Any]) -> list[str]:
    """Prepare ``claims`` (which must succeed); the CDI IDs of all their devices, each present."""
    ids = []
    for uid, devices in (await prepared(ctx, *claims)).items():
        for device in devices:
            ctx.expect(
                device.cdi_device_ids,
                f"claim {uid}: device {device.pool_name}/{device.device_name} has no CDI device IDs,"
                " so a container gets nothing of it",
            )
            ids += device.cdi_device_ids
    return ids


def resolved(ctx: CheckContext, cdi_ids: Sequence[str], when: str) -> list[ResolvedDevice]:
    try:
        return ctx.resolve_cdi(cdi_ids)
    except CDIResolutionError as err:
        ctx.fail(f"{when}: {err.what} (under {ctx.bed.cdi_root}); {err.fix}")


def env_conflicts(edits: ContainerEdits) -> dict[str, set[str]]:
    """Environment variables set to more than one value by the edits of one container."""
    values: dict[str, set[str]] = {}
    for entry in edits.env:
        key, _, value = entry.partition("=")
        values.setdefault(key, set()).add(value)
    return {key: seen for key, seen in values.items() if len(seen) > 1}


@check(
    "CDI-001",
    "every CDI device ID is fully qualified (vendor/class=name)",
    tags=TAGS,
    level=MUST,
    why="a runtime rejects an ID that is not vendor/class=name: the container does not start",
    rule=rules.CDI_IDS,
    reference=rules.cite(rules.protocol("driver-contract", "C11"), rules.CDI_SPEC),
)
async def qualified(ctx: CheckContext) -> None:
    claim = await ctx.allocated_claim(1)
    bad = [cdi_id for cdi_id in await prepared_ids(ctx, claim) if not valid_cdi_id(cdi_id)]
    ctx.expect(not bad, f"CDI device IDs not of the form vendor/class=name: {bad} (the runtime rejects them)")


@check(
    "CDI-002",
    "every CDI device ID is declared in a spec file under the CDI root when prepare returns",
    tags=TAGS,
    level=MUST,
    why="an ID without a spec file fails container creation (CDI device injection failed)",
    rule=rules.CDI_RESOLVE,
    reference=rules.cite(
        rules.protocol("grpc-api"), rules.protocol("driver-contract", "C11"), rules.DRA_API, rules.CDI_SPEC
    ),
)
async def resolvable(ctx: CheckContext) -> None:
    await require_devices(ctx, 2)
    claim = await ctx.allocated_claim(2)
    resolved(ctx, await prepared_ids(ctx, claim), "right after NodePrepareResources returned")


@check(
    "CDI-003",
    "preparing a claim again resolves its CDI IDs to the same container edits",
    tags=TAGS,
    level=SHOULD,
    why=(
        "should: the kubelet re-prepares after a restart and gives containers created later the new edits; "
        "differing edits confuse, fail nothing"
    ),
    rule=rules.IDEMPOTENT_PREPARE,
    reference=rules.cite(rules.protocol("driver-contract", "C8", "C11")),
)
async def stable_edits(ctx: CheckContext) -> None:
    claim = await ctx.allocated_claim(1)
    ids = await prepared_ids(ctx, claim)
    first = {device.cdi_id: device.edits for device in resolved(ctx, ids, "after the first prepare")}
    again_ids = await prepared_ids(ctx, claim)
    ctx.expect(sorted(again_ids) == sorted(ids), f"prepared again: CDI IDs {again_ids}, first {ids}")
    changed = [d.cdi_id for d in resolved(ctx, again_ids, "after preparing again") if first[d.cdi_id] != d.edits]
    ctx.expect(not changed, f"preparing again changed the container edits of {changed}")


@check(
    "CDI-004",
    "after unprepare and a new prepare, the CDI IDs resolve again",
    tags=TAGS,
    level=MUST,
    why="a claim prepared again for a new pod must resolve, or that pod's container fails",
    rule=rules.CDI_RESOLVE,
    reference=rules.cite(
        rules.protocol("dra-manager"), rules.protocol("driver-contract", "C11"), rules.DRA_MANAGER_GO, rules.CDI_SPEC
    ),
)
async def recreated(ctx: CheckContext) -> None:
    claim = await ctx.allocated_claim(1)
    await prepared_ids(ctx, claim)
    await unprepared(ctx, claim)
    resolved(ctx, await prepared_ids(ctx, claim), "after unprepare and prepare again")


@check(
    "CDI-005",
    "a pod's containers get CDI devices that resolve (warns when they set a variable to two values)",
    tags=(*TAGS, "lifecycle"),
    level=MUST,
    why="the kubelet hands these IDs to the runtime for each container; one that does not resolve fails it",
    rule=rules.DEVICES_TO_RUNTIME,
    reference=rules.cite(
        rules.protocol("grpc-api"), rules.protocol("dra-manager"), rules.DRA_API, rules.DRA_MANAGER_GO
    ),
)
async def pod_devices(ctx: CheckContext) -> None:
    await require_claims(ctx, 2)
    pod = await ctx.wait_prepared(await ctx.run_pod(2, containers=("first", "second"), running=False))
    manager = ctx.bed.node.manager
    ctx.expect(manager is not None, "the node runs without its DRA manager")
    assert manager is not None
    for container in ("first", "second"):
        ids = manager.get_resources(pod, container)
        ctx.expect(len(ids) >= 2, f"container {container} of a pod with two claims got CDI devices {ids}")
        edits = sum((device.edits for device in resolved(ctx, ids, f"container {container}")), ContainerEdits())
        if conflicts := env_conflicts(edits):
            ctx.warn(f"container {container}: its CDI devices set {conflicts} to different values (the last wins)")


@check(
    "CDI-006",
    "the CDI spec files under the CDI root can all be read by a runtime",
    tags=TAGS,
    level=SHOULD,
    why="should: a broken spec file of another claim does not stop this claim's devices; the runtime reports it",
    rule=rules.CDI_SPEC_FILES,
    reference=rules.cite(rules.protocol("grpc-api"), rules.DRA_API, rules.CDI_SPEC),
)
async def well_formed(ctx: CheckContext) -> None:
    claim = await ctx.allocated_claim(1)
    await prepared_ids(ctx, claim)
    _, malformed = scan([ctx.bed.cdi_root])
    ctx.expect(not malformed, "malformed CDI spec files: " + "; ".join(f"{path}: {why}" for path, why in malformed))


@check(
    "CDI-007",
    "a pod's container gets at least one environment variable from the driver's CDI edits",
    tags=(*TAGS, "lifecycle"),
    level=SHOULD,
    why=("should: KEP-5970's way to see a device in a container; a driver with device nodes or mounts only is valid"),
    rule=rules.DRIVER_VARIABLES,
    reference=rules.cite(rules.protocol("dra-manager"), rules.DRA_MANAGER_GO, rules.KEP_5970),
)
async def driver_variables(ctx: CheckContext) -> None:
    pod = await ctx.wait_prepared(await ctx.run_pod(1, running=False))
    manager = ctx.bed.node.manager
    ctx.expect(manager is not None, "the node runs without its DRA manager")
    assert manager is not None
    ids = manager.get_resources(pod, "main")
    edits = sum((device.edits for device in resolved(ctx, ids, "container main")), ContainerEdits())
    ctx.expect(
        edits.env,
        f"the CDI devices {ids} of the pod's container set no environment variable: KEP-5970 proves a device"
        " reached a container by the variables its driver injects",
    )
