"""UNP: NodeUnprepareResources as the kubelet calls it (docs/protocol.md).

The kubelet unprepares when a pod is gone, possibly after the ResourceClaim was deleted, possibly
for a claim the driver never prepared or already unprepared (after a restart, a retry), and keeps
the pod Terminating until every claim's entry comes back without an error. So unprepare must be
idempotent, must not need the claim from the API server, and must give the devices back.
"""

from __future__ import annotations

import uuid
from typing import Any

from kubelet_dra.peers.api import dra_v1_pb2
from kubelet_dra.workbench.conformance import rules
from kubelet_dra.workbench.conformance.checkcontext import CheckContext
from kubelet_dra.workbench.conformance.framework import MUST, SHOULD, check
from kubelet_dra.workbench.conformance.steps.claimsteps import (
    device_summary,
    prepared,
    require_claims,
    unprepared,
)
from kubelet_dra.workbench.testbed import objects

TAGS = ("unprepare",)
BATCH_SIZE = 3


def unknown_claims(count: int) -> list[dict[str, Any]]:
    """Claim references of claims that do not exist anywhere (as the kubelet may send after a restart)."""
    return [
        {"metadata": {"namespace": "default", "name": f"conformance-unknown-{index}", "uid": str(uuid.uuid4())}}
        for index in range(count)
    ]


@check(
    "UNP-001",
    "a prepared claim is unprepared: one entry keyed by its UID, without error",
    tags=TAGS,
    level=MUST,
    why="the pod stays Terminating until each claim is unprepared (F15)",
    rule=rules.UNPREPARE_RULES,
    reference=rules.cite(rules.protocol("dra-manager"), rules.protocol("driver-contract", "C7"), rules.DRA_MANAGER_GO),
)
async def unprepare_prepared(ctx: CheckContext) -> None:
    claim = await ctx.allocated_claim(1)
    await prepared(ctx, claim)
    await unprepared(ctx, claim)


@check(
    "UNP-002",
    "unpreparing a claim the driver never prepared succeeds",
    tags=TAGS,
    level=MUST,
    why="the kubelet unprepares claims whose prepare it never saw finish",
    rule=rules.UNPREPARE_AGAIN,
    reference=rules.cite(rules.protocol("driver-contract", "C9")),
)
async def unprepare_unknown(ctx: CheckContext) -> None:
    await unprepared(ctx, *unknown_claims(1), why=" (never prepared, does not exist)")


@check(
    "UNP-003",
    "unpreparing a claim a second time succeeds",
    tags=TAGS,
    level=MUST,
    why="the kubelet may unprepare twice across a restart",
    rule=rules.UNPREPARE_AGAIN,
    reference=rules.cite(rules.protocol("driver-contract", "C9"), rules.protocol("dra-manager"), rules.DRA_MANAGER_GO),
)
async def unprepare_twice(ctx: CheckContext) -> None:
    claim = await ctx.allocated_claim(1)
    await prepared(ctx, claim)
    await unprepared(ctx, claim)
    await unprepared(ctx, claim, why=" (already unprepared)")


@check(
    "UNP-004",
    "an empty NodeUnprepareResources request returns OK with an empty map",
    tags=TAGS,
    level=SHOULD,
    why="should: the kubelet never sends an empty request",
    rule=rules.EMPTY_REQUEST,
    reference=rules.cite(
        rules.protocol("driver-helper"), rules.protocol("driver-contract", "C13"), rules.KUBELETPLUGIN_GO
    ),
)
async def empty_request(ctx: CheckContext) -> None:
    response = await ctx.client().node_unprepare_resources(dra_v1_pb2.NodeUnprepareResourcesRequest())
    ctx.expect(not response.claims, f"an empty request got entries for {sorted(response.claims)}")


@check(
    "UNP-005",
    "a batch of prepared and unknown claims gets one entry per claim UID, all without error",
    tags=TAGS,
    level=MUST,
    why="batches as for prepare: one entry per claim UID",
    rule=rules.UNPREPARE_RULES,
    reference=rules.cite(rules.protocol("driver-contract", "C7", "C9")),
)
async def batch(ctx: CheckContext) -> None:
    await require_claims(ctx, BATCH_SIZE - 1)
    claims = [await ctx.allocated_claim(1) for _ in range(BATCH_SIZE - 1)]
    await prepared(ctx, *claims)
    await unprepared(ctx, *claims, *unknown_claims(1))


@check(
    "UNP-006",
    "a claim already deleted from the API server is unprepared (unprepare needs no API object)",
    tags=TAGS,
    level=MUST,
    why="the kubelet unprepares after the claim is deleted; needing it keeps the pod Terminating",
    rule=rules.UNPREPARE_WITHOUT_API,
    reference=rules.cite(rules.protocol("dra-manager"), rules.protocol("failure-modes", "F15"), rules.DRA_MANAGER_GO),
)
async def unprepare_deleted(ctx: CheckContext) -> None:
    claim = await ctx.allocated_claim(1)
    await prepared(ctx, claim)
    await objects.delete(ctx.bed.kube, "ResourceClaim", claim["metadata"]["name"])
    await unprepared(ctx, claim, why=" (its ResourceClaim was deleted, as when a pod's generated claim goes)")


@check(
    "UNP-007",
    "an unprepared claim is prepared again with the same devices",
    tags=TAGS,
    level=MUST,
    why="a claim can be prepared again for a new pod",
    rule=rules.IDEMPOTENT_PREPARE,
    reference=rules.cite(rules.protocol("dra-manager"), rules.protocol("driver-contract", "C8"), rules.DRA_MANAGER_GO),
)
async def prepare_after_unprepare(ctx: CheckContext) -> None:
    claim = await ctx.allocated_claim(1)
    uid = claim["metadata"]["uid"]
    first = device_summary((await prepared(ctx, claim))[uid])
    await unprepared(ctx, claim)
    again = device_summary((await prepared(ctx, claim))[uid])
    ctx.expect([d[:3] for d in again] == [d[:3] for d in first], f"prepared again: {again}; the first time: {first}")


@check(
    "UNP-008",
    "unpreparing gives the devices back: all of them can be prepared for another claim",
    tags=TAGS,
    level=MUST,
    why="devices never given back can never be allocated again",
    rule=rules.DEVICES_RETURNED,
    reference=rules.cite(rules.protocol("dra-manager"), rules.DRA_MANAGER_GO),
)
async def devices_freed(ctx: CheckContext) -> None:
    count = await ctx.devices_at_once()
    first = await ctx.allocated_claim(count)
    await prepared(ctx, first)
    await unprepared(ctx, first)
    await objects.delete(ctx.bed.kube, "ResourceClaim", first["metadata"]["name"])
    second = await ctx.allocated_claim(count)
    await prepared(ctx, second)
