"""The steps many checks take with claims: prepare and unprepare them through the driver and judge the answers
as the kubelet does (one entry per claim UID, the allocated devices, no error), and skip on small nodes.

Checks import these steps, never each other, so each check module stays readable on its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubelet_dra.peers.api import dra_v1_pb2
from kubelet_dra.workbench.conformance.checkcontext import CheckContext


def claim_label(claim: Mapping[str, Any]) -> str:
    meta = claim["metadata"]
    return f"{meta.get('namespace', 'default')}/{meta['name']} ({meta['uid']})"


def expect_keys(
    ctx: CheckContext, method: str, answered: Mapping[str, Any], claims: Sequence[Mapping[str, Any]]
) -> None:
    """One entry per requested claim UID, nothing else (the kubelet rejects the whole answer otherwise)."""
    wanted = {claim["metadata"]["uid"]: claim for claim in claims}
    missing = [claim_label(claim) for uid, claim in wanted.items() if uid not in answered]
    extra = sorted(set(answered) - set(wanted))
    ctx.expect(
        not missing, f"{method} left out claim(s) {', '.join(missing)} (kubelet: skipped {len(missing)} claims, F17)"
    )
    ctx.expect(not extra, f"{method} answered for claim UID(s) nobody asked for: {extra} (kubelet: F16)")


def expect_devices(ctx: CheckContext, claim: Mapping[str, Any], devices: Sequence[dra_v1_pb2.Device]) -> None:
    """The devices of a prepared claim are the allocated ones, each naming pool, device and its request.

    A shared device may be allocated to several requests of one claim, once per request with its own
    shareID; the driver then answers one entry per share, each naming its request."""
    results = [r for r in claim["status"]["allocation"]["devices"]["results"] if r["driver"] == ctx.driver_name]
    allocated: dict[tuple[str, str], set[str]] = {}
    for result in results:
        allocated.setdefault((result["pool"], result["device"]), set()).add(result["request"].split("/")[0])
    by_share = {r["shareID"]: r["request"].split("/")[0] for r in results if "shareID" in r}
    label = claim_label(claim)
    named: set[tuple[tuple[str, str], str]] = set()
    for device in devices:
        ctx.expect(device.pool_name and device.device_name, f"claim {label}: a device without pool or device name")
        key = (device.pool_name, device.device_name)
        ctx.expect(key in allocated, f"claim {label}: device {'/'.join(key)} was not allocated ({sorted(allocated)})")
        share = device.share_id if device.HasField("share_id") else ""
        expected = {by_share[share]} if share in by_share else allocated[key]
        requests = {name.split("/")[0] for name in device.request_names}
        ctx.expect(
            bool(requests & expected),
            f"claim {label}: device {'/'.join(key)}{f' (share {share})' if share else ''} names requests"
            f" {list(device.request_names)}, not its request {' or '.join(sorted(expected))!r}"
            " (containers asking for that request would not get it)",
        )
        named |= {(key, request) for request in requests}
    unanswered = sorted(
        f"{'/'.join(key)} for {request!r}"
        for key, wanted in allocated.items()
        for request in wanted
        if (key, request) not in named
    )
    ctx.expect(not unanswered, f"claim {label}: no prepared device answers {', '.join(unanswered)}")


async def prepared(ctx: CheckContext, *claims: Mapping[str, Any]) -> dict[str, list[dra_v1_pb2.Device]]:
    """Prepare ``claims`` in one call, which must succeed for each with its allocated devices; UID → devices."""
    response = await ctx.prepare(*claims)
    expect_keys(ctx, "NodePrepareResources", response.claims, claims)
    for claim in claims:
        entry = response.claims[claim["metadata"]["uid"]]
        ctx.expect(not entry.error, f"NodePrepareResources failed claim {claim_label(claim)}: {entry.error}")
        expect_devices(ctx, claim, entry.devices)
    return {claim["metadata"]["uid"]: list(response.claims[claim["metadata"]["uid"]].devices) for claim in claims}


async def published_devices(ctx: CheckContext) -> int:
    """How many devices the driver's slices list for this node."""
    return sum(len(item["spec"].get("devices") or []) for item in await ctx.slices())


async def require_devices(ctx: CheckContext, count: int) -> None:
    """Skip a check that needs ``count`` devices on a node with fewer (a one-GPU node is a fine target);
    with none at all the check goes on and fails on its allocation. With ``--claim`` shapes the claim made
    says whether it has the devices (``allocated_claim`` skips then)."""
    published = await published_devices(ctx)
    if 0 < published < count and not ctx.options.claims:
        ctx.skip(f"needs {count} devices of {ctx.driver_name} on {ctx.node_name}; its slices list {published}")


async def require_claims(ctx: CheckContext, count: int) -> None:
    """Skip a check that needs ``count`` claims at once when the node cannot hold that many: of one device
    each, ``count`` devices; of the ``--claim`` shapes, as many as the allocator fits together."""
    if ctx.options.claims:
        await ctx.require_together(count)
    else:
        await require_devices(ctx, count)


def device_summary(devices: Sequence[dra_v1_pb2.Device]) -> list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
    return sorted(
        (d.pool_name, d.device_name, tuple(sorted(d.request_names)), tuple(sorted(d.cdi_device_ids))) for d in devices
    )


async def unprepared(ctx: CheckContext, *claims: Mapping[str, Any], why: str = "") -> None:
    """Unprepare ``claims`` in one call, which must succeed for each of them."""
    response = await ctx.unprepare(*claims)
    expect_keys(ctx, "NodeUnprepareResources", response.claims, claims)
    for claim in claims:
        error = response.claims[claim["metadata"]["uid"]].error
        ctx.expect(not error, f"NodeUnprepareResources failed claim {claim_label(claim)}{why}: {error}")
