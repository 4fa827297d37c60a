"""SLC: the ResourceSlices the driver publishes (docs/protocol.md).

The scheduler allocates only what the slices describe, and the kubelet wipes a node's slices at
start and when a driver goes away, so a driver must publish well-formed slices for its own node,
re-create them after a wipe, and prepare exactly the devices they describe.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import Any

from kubelet_dra.workbench.conformance import rules
from kubelet_dra.workbench.conformance.checkcontext import CheckContext, pool_devices
from kubelet_dra.workbench.conformance.framework import MUST, SHOULD, check
from kubelet_dra.workbench.conformance.steps.restarts import kubelet_restart
from kubelet_dra.workbench.testbed import objects

TAGS = ("slices",)
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
SLOW_REPUBLISH = 30.0
"""A republish slower than this earns a warning (the kubeletplugin helper's sync delay, F14)."""


def _key(item: dict[str, Any]) -> str:
    return item["metadata"]["name"]


async def _own(ctx: CheckContext) -> list[dict[str, Any]]:
    """The driver's slices for this node; fails when there are none (nothing else to check)."""
    ctx.require_registered()
    slices = await ctx.slices()
    ctx.expect(slices, f"{ctx.driver_name} published no ResourceSlice with spec.nodeName={ctx.node_name}")
    return slices


async def _all(ctx: CheckContext) -> list[dict[str, Any]]:
    """Every slice of the driver, whichever node it names."""
    ctx.require_registered()
    return await objects.list_objects(ctx.bed.kube, "ResourceSlice", field_selector=f"spec.driver={ctx.driver_name}")


async def _written_here(ctx: CheckContext) -> list[dict[str, Any]]:
    """The driver's slices its instance on this node wrote. On the embedded API server that is every one (no
    other instance runs); on a cluster shared with other nodes, those owned by this node's Node, as the
    kubelet plugin helper sets the owner: the slices of the driver's instances on other nodes are theirs."""
    slices = await _all(ctx)
    if ctx.capabilities.embedded:
        return slices
    return [item for item in slices if _owner_node(item) == ctx.node_name]


def _owner_node(item: dict[str, Any]) -> str:
    """The Node that owns a slice (its owner reference of kind Node), or empty."""
    owners = item["metadata"].get("ownerReferences") or []
    return next((owner.get("name", "") for owner in owners if owner.get("kind") == "Node"), "")


@check(
    "SLC-001",
    "ResourceSlices are published for this node",
    tags=TAGS,
    level=MUST,
    why="without slices nothing is allocated (KEP-5970 behaviour 2)",
    rule=rules.SLICES_PUBLISHED,
    reference=rules.cite(
        rules.protocol("driver-contract", "C15"),
        rules.protocol("dra-plugin-manager"),
        rules.DRA_PLUGIN_MANAGER_GO,
        rules.KEP_5970,
    ),
)
async def published(ctx: CheckContext) -> None:
    slices = await _own(ctx)
    ctx.expect(pool_devices(slices), "the driver's slices for this node list no devices")


@check(
    "SLC-002",
    "every slice names the driver, a node placement, a pool with generation and slice count",
    tags=TAGS,
    level=MUST,
    why="the API server and scheduler need driver, placement and pool",
    rule=rules.SLICE_FIELDS,
    reference=rules.cite(rules.protocol("driver-contract", "C15")),
)
async def well_formed(ctx: CheckContext) -> None:
    slices = await _all(ctx)
    ctx.expect(slices, f"no ResourceSlice has spec.driver={ctx.driver_name}")
    for item in slices:
        spec, name = item["spec"], _key(item)
        ctx.expect(spec.get("driver") == ctx.driver_name, f"{name}: spec.driver is {spec.get('driver')!r}")
        placements = [
            key for key in ("nodeName", "nodeSelector", "allNodes", "perDeviceNodeSelection") if spec.get(key)
        ]
        ctx.expect(len(placements) == 1, f"{name}: exactly one of nodeName/nodeSelector/allNodes, found {placements}")
        pool = spec.get("pool") or {}
        ctx.expect(pool.get("name"), f"{name}: spec.pool.name is empty")
        ctx.expect(
            isinstance(pool.get("generation", 0), int) and pool.get("generation", 0) >= 0,
            f"{name}: pool.generation is {pool.get('generation')!r}",
        )
        ctx.expect(
            isinstance(pool.get("resourceSliceCount"), int) and pool["resourceSliceCount"] >= 1,
            f"{name}: pool.resourceSliceCount is {pool.get('resourceSliceCount')!r}",
        )


@check(
    "SLC-003",
    "the slices of a pool agree on its generation and their number is its resourceSliceCount",
    tags=TAGS,
    level=MUST,
    why="the scheduler does not allocate from an incomplete pool",
    rule=rules.POOL_COMPLETE,
    reference=rules.cite(rules.protocol("driver-helper"), rules.RESOURCESLICE_GO, rules.KEP_4381),
)
async def pools_complete(ctx: CheckContext) -> None:
    pools: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for item in await _own(ctx):
        pools[item["spec"]["pool"]["name"]].append(item["spec"]["pool"])
    for name, parts in pools.items():
        generations = {part.get("generation", 0) for part in parts}
        ctx.expect(len(generations) == 1, f"pool {name}: slices of generations {sorted(generations)} at once")
        counts = {part.get("resourceSliceCount") for part in parts}
        ctx.expect(counts == {len(parts)}, f"pool {name}: {len(parts)} slices, resourceSliceCount says {counts}")


@check(
    "SLC-004",
    "device names are DNS labels, unique within their pool",
    tags=TAGS,
    level=MUST,
    why="duplicates stop the helper publishing the pool",
    rule=rules.DEVICE_NAMES,
    reference=rules.cite(rules.protocol("grpc-api"), rules.protocol("driver-contract", "C11"), rules.DRA_API),
)
async def device_names(ctx: CheckContext) -> None:
    seen: set[tuple[str, str]] = set()
    for item in await _own(ctx):
        pool = item["spec"]["pool"]["name"]
        for device in item["spec"].get("devices") or []:
            name = device.get("name", "")
            ctx.expect(DNS_LABEL.match(name), f"pool {pool}: device name {name!r} is not a DNS label")
            ctx.expect((pool, name) not in seen, f"pool {pool}: device {name} is listed twice")
            seen.add((pool, name))


@check(
    "SLC-005",
    "the driver writes no slice for another node",
    tags=TAGS,
    level=MUST,
    why="the node authorizer refuses other nodes' slices (KEP-4381)",
    rule=rules.OWN_NODE,
    reference=rules.cite(rules.protocol("driver-contract", "C15"), rules.KEP_4381),
)
async def own_node_only(ctx: CheckContext) -> None:
    others = sorted(
        f"{_key(item)} (nodeName {item['spec']['nodeName']})"
        for item in await _written_here(ctx)
        if item["spec"].get("nodeName") not in (None, "", ctx.node_name)
    )
    ctx.expect(not others, f"slices for other nodes: {', '.join(others)} (the node authorizer rejects these)")


@check(
    "SLC-006",
    "slices wiped at a kubelet start are published again within the limit (--republish-within)",
    tags=(*TAGS, "disruptive", "slow"),
    level=MUST,
    why="the kubelet wipes slices at every start; without them no new pod schedules",
    rule=rules.REPUBLISH,
    reference=rules.cite(rules.protocol("driver-contract", "C15"), rules.protocol("failure-modes", "F14")),
)
async def republished(ctx: CheckContext) -> None:
    restart = await kubelet_restart(ctx)
    restart.expect_republished(ctx)
    seconds = restart.republished_after or 0.0
    if seconds > SLOW_REPUBLISH:
        ctx.warn(f"slices came back after {seconds:.1f} s (pods wait for them to be scheduled)")


@check(
    "SLC-007",
    "republished slices describe the same pools and devices",
    tags=(*TAGS, "disruptive", "slow"),
    level=SHOULD,
    why="should: allocated claims keep their devices even when the republished slices differ",
    rule=rules.REPUBLISH,
    reference=rules.cite(
        rules.protocol("driver-contract", "C15"), rules.protocol("dra-plugin-manager"), rules.DRA_PLUGIN_MANAGER_GO
    ),
)
async def republished_same(ctx: CheckContext) -> None:
    restart = await kubelet_restart(ctx)
    restart.expect_republished(ctx)
    before, after = restart.before, restart.after
    ctx.expect(after == before, f"before the wipe {sorted(before - after)} were published, after it {sorted(after)}")


@check(
    "SLC-008",
    "prepared devices are the allocated ones and exist in the published slices",
    tags=(*TAGS, "prepare"),
    level=MUST,
    why="a prepared device that is not the allocated one gives the pod the wrong hardware",
    rule=rules.PUBLISHED_PREPARABLE,
    reference=rules.cite(
        rules.protocol("grpc-api"), rules.protocol("driver-contract", "C11"), rules.DRA_API, rules.KEP_4381
    ),
)
async def prepared_devices_published(ctx: CheckContext) -> None:
    published = pool_devices(await _own(ctx))
    claim = await ctx.allocated_claim(1)
    uid = claim["metadata"]["uid"]
    results = claim["status"]["allocation"]["devices"]["results"]
    allocated = {(r["pool"], r["device"]) for r in results}
    result = (await ctx.prepare(claim)).claims.get(uid)
    ctx.expect(result is not None, f"the answer has no entry for claim UID {uid}")
    ctx.expect(not result.error, f"preparing the claim failed: {result.error}")
    devices = {(d.pool_name, d.device_name) for d in result.devices}
    ctx.expect(all(pool and name for pool, name in devices), f"a device without pool or name: {sorted(devices)}")
    ctx.expect(devices <= published, f"prepared {sorted(devices - published)}, which no slice of this node lists")
    ctx.expect(devices == allocated, f"prepared {sorted(devices)}, the claim was allocated {sorted(allocated)}")


@check(
    "SLC-009",
    "every published device can be allocated and prepared at once (as many as their shared counters allow)",
    tags=(*TAGS, "prepare"),
    level=MUST,
    why="a published device that cannot be prepared fails the pod it is allocated to",
    rule=rules.PUBLISHED_PREPARABLE,
    reference=rules.cite(
        rules.protocol("dra-plugin-manager"),
        rules.protocol("driver-contract", "C15"),
        rules.DRA_PLUGIN_MANAGER_GO,
        rules.KEP_4381,
    ),
)
async def all_devices_preparable(ctx: CheckContext) -> None:
    published = pool_devices(await _own(ctx))
    together = await ctx.allocatable_at_once()
    claim = await ctx.allocated_claim(together)
    allocated = {(r["pool"], r["device"]) for r in claim["status"]["allocation"]["devices"]["results"]}
    uid = claim["metadata"]["uid"]
    result = (await ctx.prepare(claim)).claims.get(uid)
    ctx.expect(result is not None, f"the answer has no entry for claim UID {uid}")
    ctx.expect(not result.error, f"preparing a claim for {together} devices failed: {result.error}")
    prepared = {(d.pool_name, d.device_name) for d in result.devices}
    what = (
        "published devices"
        if together == len(published)
        else f"devices allocatable at once ({len(published)} published, sharing counters)"
    )
    ctx.expect(prepared == allocated, f"prepared {len(prepared)} of {together} {what}")
