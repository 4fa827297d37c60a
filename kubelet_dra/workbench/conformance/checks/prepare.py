"""PRE: NodePrepareResources as the kubelet calls it (docs/protocol.md).

The kubelet sends a batch of claim references and needs back exactly one entry per claim UID (an
entry keyed otherwise, or a missing one, fails the pod: §7 F16, F17), each with the devices it
hands to the runtime, within 45 s, the same devices on every repeat. Drivers built on the Go
helper read each claim from the API server inside the call, so every claim the suite sends here is
a real, allocated ResourceClaim; only the per-claim error check asks for a device that is not there.
"""

from __future__ import annotations

import asyncio
import copy
import uuid
from typing import Any

from kubelet_dra.peers.api import dra_v1_pb2
from kubelet_dra.workbench.conformance import rules
from kubelet_dra.workbench.conformance.checkcontext import CheckContext
from kubelet_dra.workbench.conformance.framework import MUST, SHOULD, check
from kubelet_dra.workbench.conformance.steps.claimsteps import (
    claim_label,
    device_summary,
    expect_devices,
    expect_keys,
    prepared,
    require_claims,
    require_devices,
)
from kubelet_dra.workbench.testbed import manifests, objects

TAGS = ("prepare",)
KUBELET_BUDGET = 45.0
"""The kubelet's per-call timeout for NodePrepareResources."""
BATCH = ("conformance-batch-a", "conformance-batch-b", "conformance-batch-c")
"""Fixed names of PRE-003's claims: a reference-driver fault knob can pick one of them by name."""
MISSING_DEVICE = "conformance-no-such-device"
CONCURRENT_CALLS = 3


async def shareable_devices(ctx: CheckContext) -> set[tuple[str, str]]:
    """(pool, device) of the devices the driver publishes with ``allowMultipleAllocations: true``."""
    return {
        (item["spec"]["pool"]["name"], device["name"])
        for item in await ctx.slices()
        for device in item["spec"].get("devices") or []
        if device.get("allowMultipleAllocations")
    }


@check(
    "CLM-001",
    "the driver prepares a claim of the shape the checks use (--claim, or one device of the DeviceClass)",
    tags=TAGS,
    level=MUST,
    why="the pods of a real cluster bring claims of this shape: a driver that refuses them fails every pod",
    rule=rules.PREPARE_EVERY_CLAIM,
    reference=rules.cite(rules.protocol("driver-contract", "C7")),
    first=True,
)
async def accepted_claim(ctx: CheckContext) -> None:
    """Runs first: when the driver refuses the claim, this is the one finding (with the --claim to pass), and
    every check that makes such a claim is not run because of it."""
    await ctx.require_accepted()


@check(
    "PRE-001",
    "an empty NodePrepareResources request returns OK with an empty map",
    tags=TAGS,
    level=SHOULD,
    why="should: the kubelet never sends an empty request; liveness probes do",
    rule=rules.EMPTY_REQUEST,
    reference=rules.cite(rules.protocol("driver-contract", "C13")),
)
async def empty_request(ctx: CheckContext) -> None:
    response = await ctx.client().node_prepare_resources(dra_v1_pb2.NodePrepareResourcesRequest())
    ctx.expect(not response.claims, f"an empty request got entries for {sorted(response.claims)}")


@check(
    "PRE-002",
    "one claim is prepared with exactly its allocated devices, keyed by its UID",
    tags=TAGS,
    level=MUST,
    why="the kubelet fails the pod on a missing or foreign key (F16, F17)",
    rule=rules.PREPARE_EVERY_CLAIM,
    reference=rules.cite(rules.protocol("driver-contract", "C7", "C11")),
)
async def one_claim(ctx: CheckContext) -> None:
    claim = await ctx.allocated_claim(1)
    devices = await prepared(ctx, claim)
    ctx.expect(devices[claim["metadata"]["uid"]], f"claim {claim_label(claim)} was prepared without devices")


@check(
    "PRE-003",
    "a batch of claims gets one entry per claim UID and no other keys",
    tags=TAGS,
    level=MUST,
    why="the same for batches: one entry per claim UID, no other key",
    rule=rules.PREPARE_EVERY_CLAIM,
    reference=rules.cite(rules.protocol("driver-contract", "C7"), rules.protocol("failure-modes", "F16–F17")),
)
async def batch(ctx: CheckContext) -> None:
    await require_claims(ctx, len(BATCH))
    claims = [await ctx.allocated_claim(1, name=name) for name in BATCH]
    await prepared(ctx, *claims)


@check(
    "PRE-004",
    "each device names the request it was allocated for (claims with several requests)",
    tags=TAGS,
    level=MUST,
    why="a device not naming its request reaches no container asking for that request",
    rule=rules.REQUEST_NAMES,
    reference=rules.cite(rules.protocol("grpc-api"), rules.protocol("driver-contract", "C11"), rules.DRA_API),
)
async def several_requests(ctx: CheckContext) -> None:
    await require_devices(ctx, 2)
    claim = await ctx.allocated_claim(1, requests=("first", "second"))
    devices = (await prepared(ctx, claim))[claim["metadata"]["uid"]]
    ctx.expect(len(devices) == 2, f"a claim with two requests of one device each got {len(devices)} device(s)")


@check(
    "PRE-005",
    "preparing a prepared claim again returns the same devices (--idempotency-count times)",
    tags=TAGS,
    level=MUST,
    why="the kubelet prepares again after a restart; different devices break running containers",
    rule=rules.IDEMPOTENT_PREPARE,
    reference=rules.cite(rules.protocol("driver-contract", "C8"), rules.protocol("dra-manager"), rules.DRA_MANAGER_GO),
)
async def idempotent(ctx: CheckContext) -> None:
    claim = await ctx.allocated_claim(1)
    uid = claim["metadata"]["uid"]
    first = device_summary((await prepared(ctx, claim))[uid])
    for attempt in range(2, ctx.options.idempotency_count + 1):
        again = device_summary((await prepared(ctx, claim))[uid])
        ctx.expect(again == first, f"prepare #{attempt} returned {again}, the first returned {first}")


async def _claim_of_missing_device(ctx: CheckContext, model: dict[str, Any]) -> dict[str, Any]:
    """A claim allocated, like ``model``, on this node's pool, but a device the driver does not have."""
    name = ctx.name("missing")
    claim = await objects.apply(ctx.bed.kube, {**manifests.claim(name, ctx.device_class), "spec": model["spec"]})
    ctx.defer(lambda: objects.delete(ctx.bed.kube, "ResourceClaim", name))
    status = copy.deepcopy(model["status"])
    for result in status["allocation"]["devices"]["results"]:
        result["device"] = MISSING_DEVICE
    for consumer in status.get("reservedFor") or []:
        consumer.update(name=name, uid=str(uuid.uuid4()))
    return await objects.write_status(ctx.bed.kube, claim, status)


@check(
    "PRE-006",
    "a failing claim is reported in its entry's error while the other claims of the batch are prepared",
    tags=TAGS,
    level=SHOULD,
    why="should: the API says failures *can* be per claim; a gRPC error only retries the whole batch",
    rule=rules.PREPARE_ERRORS,
    reference=rules.cite(rules.protocol("driver-contract", "C10"), rules.protocol("grpc-api"), rules.DRA_API),
)
async def per_claim_error(ctx: CheckContext) -> None:
    good = await ctx.allocated_claim(1)
    bad = await _claim_of_missing_device(ctx, good)
    response = await ctx.prepare(good, bad)
    claims = (good, bad)
    expect_keys(ctx, "NodePrepareResources", response.claims, claims)
    good_entry, bad_entry = (response.claims[c["metadata"]["uid"]] for c in claims)
    ctx.expect(
        not good_entry.error,
        f"claim {claim_label(good)} failed along with the bad claim of its batch: {good_entry.error}",
    )
    expect_devices(ctx, good, good_entry.devices)
    if not bad_entry.error:
        # The kubelet never sends such a claim (only published devices are allocated), so a driver
        # that does not check allocations against its devices breaks no rule; the check is moot.
        ctx.skip(
            f"no per-claim failure could be provoked: the driver prepared claim {claim_label(bad)}, allocated"
            f" device {MISSING_DEVICE!r} it does not publish, without an error (it does not check allocations"
            " against its own devices, e.g. Kubernetes' DRA test driver)"
        )


@check(
    "PRE-007",
    "NodePrepareResources answers well within the kubelet's 45 s (warns past --latency-warning)",
    tags=TAGS,
    level=MUST,
    why="past 45 s the kubelet cancels the call and the pod does not start",
    rule=rules.CALL_TIMEOUT,
    reference=rules.cite(rules.protocol("numbers"), rules.protocol("driver-contract", "C7"), rules.DRA_PLUGIN_GO),
)
async def latency(ctx: CheckContext) -> None:
    claim = await ctx.allocated_claim(1)
    _, seconds = await ctx.timed(prepared(ctx, claim))
    ctx.expect(seconds < KUBELET_BUDGET, f"prepare took {seconds:.1f} s; the kubelet gives up after 45 s")
    if seconds > ctx.options.latency_warning:
        ctx.warn(f"prepare took {seconds:.1f} s (over {ctx.options.latency_warning:g} s; the kubelet waits 45 s)")


@check(
    "PRE-008",
    f"{CONCURRENT_CALLS} concurrent NodePrepareResources calls for different claims all succeed",
    tags=TAGS,
    level=MUST,
    why="pod workers of different pods call at the same time",
    rule=rules.CONCURRENT_CALLS,
    reference=rules.cite(rules.protocol("driver-contract", "C12"), rules.protocol("dra-manager"), rules.DRA_MANAGER_GO),
)
async def concurrent(ctx: CheckContext) -> None:
    await require_claims(ctx, CONCURRENT_CALLS)
    claims = [await ctx.allocated_claim(1) for _ in range(CONCURRENT_CALLS)]
    answers, seconds = await ctx.timed(asyncio.gather(*(prepared(ctx, claim) for claim in claims)))
    devices = [(pool, device) for answer in answers for d in answer.values() for pool, device, *_ in device_summary(d)]
    shareable = await shareable_devices(ctx)
    shared = sorted({key for key in devices if devices.count(key) > 1} - shareable)
    ctx.expect(not shared, f"concurrently prepared claims share devices that allow one allocation only: {shared}")
    if seconds > ctx.options.latency_warning:
        ctx.warn(f"{len(claims)} concurrent prepares took {seconds:.1f} s")
