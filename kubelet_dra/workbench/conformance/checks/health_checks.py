"""HEA: the optional DRAResourceHealth stream (docs/protocol.md).

Only for drivers that advertise ``v1.DRAResourceHealth`` or ``v1alpha1.DRAResourceHealth``: the kubelet
opens ``NodeWatchResources`` on the one it prefers (v1 first, as 1.37 does) and takes every message as
the full list of the driver's devices; a device
not reported again within its timeout (the message's ``health_check_timeout_seconds``, else 30 s)
reads as Unknown in pod status. So the stream must start at once, name every published device,
and repeat itself more often than the timeout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import attrs

from kubelet_dra.kubelet.cm.dra.healthinfo import DEFAULT_HEALTH_TIMEOUT, MESSAGE_MAX_BYTES, Health
from kubelet_dra.kubelet.cm.dra.plugin.options import DEFAULT_HEALTH_RESTART_DELAY
from kubelet_dra.peers.api import dra_health_v1alpha1_pb2 as health_pb2
from kubelet_dra.peers.api.services import HealthResponse
from kubelet_dra.peers.errors import StateError
from kubelet_dra.workbench.conformance import rules
from kubelet_dra.workbench.conformance.checkcontext import CheckContext
from kubelet_dra.workbench.conformance.framework import HEALTH, SHOULD, check

TAGS = ("health",)
NEEDS = (HEALTH,)
FIRST_MESSAGE_WITHIN = 5.0
"""The kubelet restarts a failed stream after 5 s; a driver should not take longer to say anything."""
MARGIN = 2.0
NODE_VIEW_WITHIN = DEFAULT_HEALTH_RESTART_DELAY + FIRST_MESSAGE_WITHIN + MARGIN
"""The node reopens a stream that ended 5 s later (after a driver restart, say); then the first list is due."""


@attrs.define
class Watch:
    """The health stream as the suite follows it: each message with the time it arrived."""

    messages: list[tuple[float, HealthResponse]] = attrs.Factory(list)
    arrived: asyncio.Event = attrs.Factory(asyncio.Event)

    def handle(self, response: HealthResponse) -> None:
        self.messages.append((time.monotonic(), response))
        self.arrived.set()

    async def wait_for(self, count: int, timeout: float) -> bool:
        """True once ``count`` messages arrived, False after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while len(self.messages) < count:
            self.arrived.clear()
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    await self.arrived.wait()
            except TimeoutError:
                return len(self.messages) >= count
        return True


async def watch(ctx: CheckContext, count: int, timeout: float) -> Watch:
    """Open NodeWatchResources on the node's connection and collect up to ``count`` messages."""
    stream = Watch()
    service = ctx.capabilities.health_services[0]
    task = asyncio.create_task(ctx.client().node_watch_resources(service, stream.handle))

    async def close() -> None:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)

    ctx.defer(close)
    done = asyncio.ensure_future(stream.wait_for(count, timeout))
    await asyncio.wait({task, done}, return_when=asyncio.FIRST_COMPLETED)
    if task.done() and not done.done():
        done.cancel()
        error = task.exception()
        ctx.fail(f"the NodeWatchResources stream ended after {len(stream.messages)} message(s): {error or 'OK'}")
    return stream


def timeout_of(response: HealthResponse) -> float:
    """The shortest staleness timeout the kubelet applies to the devices of this message."""
    timeouts = [
        float(d.health_check_timeout_seconds) if d.health_check_timeout_seconds > 0 else DEFAULT_HEALTH_TIMEOUT
        for d in response.devices
    ]
    return min(timeouts, default=DEFAULT_HEALTH_TIMEOUT)


def reported(response: HealthResponse) -> set[tuple[str, str]]:
    return {(d.device.pool_name, d.device.device_name) for d in response.devices}


async def published(ctx: CheckContext) -> set[tuple[str, str]]:
    return {
        (item["spec"]["pool"]["name"], device["name"])
        for item in await ctx.slices()
        for device in item["spec"].get("devices") or []
    }


def first(ctx: CheckContext, stream: Watch) -> HealthResponse:
    ctx.expect(stream.messages, f"NodeWatchResources sent nothing within {FIRST_MESSAGE_WITHIN:g} s")
    return stream.messages[0][1]


@check(
    "HEA-001",
    f"NodeWatchResources sends a first device list within {FIRST_MESSAGE_WITHIN:g} s",
    tags=TAGS,
    level=SHOULD,
    why="should: health is optional (KEP-4680) and the kubelet waits for a list; 5 s is our bound",
    rule=rules.HEALTH_COMPLETE_LIST,
    reference=rules.cite(
        rules.protocol("device-health"), rules.protocol("driver-contract", "C14"), rules.HEALTH_INFO_GO, rules.KEP_4680
    ),
    needs=NEEDS,
)
async def first_message(ctx: CheckContext) -> None:
    stream = await watch(ctx, 1, FIRST_MESSAGE_WITHIN)
    ctx.expect(first(ctx, stream).devices, "the first NodeWatchResources message lists no devices")


@check(
    "HEA-002",
    "every health message is the full list: each device published for this node, once",
    tags=TAGS,
    level=SHOULD,
    why="should: the API says the list *should* be complete; devices left out stay Unknown",
    rule=rules.HEALTH_COMPLETE_LIST,
    reference=rules.cite(
        rules.protocol("device-health"), rules.protocol("driver-contract", "C14"), rules.HEALTH_INFO_GO, rules.KEP_4680
    ),
    needs=NEEDS,
)
async def full_list(ctx: CheckContext) -> None:
    stream = await watch(ctx, 1, FIRST_MESSAGE_WITHIN)
    message = first(ctx, stream)
    listed = [(d.device.pool_name, d.device.device_name) for d in message.devices]
    ctx.expect(len(listed) == len(set(listed)), f"a health message lists a device twice: {sorted(listed)}")
    wanted = await published(ctx)
    missing, unknown = sorted(wanted - set(listed)), sorted(set(listed) - wanted)
    ctx.expect(not missing, f"published devices missing from the health list (they turn Unknown): {missing}")
    ctx.expect(not unknown, f"the health list names devices the driver did not publish for this node: {unknown}")


@check(
    "HEA-003",
    "each device's health entry is valid: a known state, a sane timestamp and timeout, a short message",
    tags=TAGS,
    level=SHOULD,
    why="should: the kubelet clamps the timeout, cuts the message and overwrites the timestamp",
    rule=rules.HEALTH_FIELDS,
    reference=rules.cite(
        rules.protocol("device-health"),
        rules.protocol("numbers"),
        rules.HEALTH_INFO_GO,
        rules.DRA_PLUGIN_GO,
        rules.KEP_4680,
    ),
    needs=NEEDS,
)
async def valid_entries(ctx: CheckContext) -> None:
    message = first(ctx, await watch(ctx, 1, FIRST_MESSAGE_WITHIN))
    problems = []
    now = time.time()
    for entry in message.devices:
        name = f"{entry.device.pool_name}/{entry.device.device_name}"
        if entry.health not in (health_pb2.HEALTHY, health_pb2.UNHEALTHY, health_pb2.UNKNOWN):
            problems.append(f"{name}: health {entry.health} is not a HealthStatus value")
        if entry.last_updated_time > now + MARGIN:
            problems.append(f"{name}: last_updated_time {entry.last_updated_time} is in the future")
        if entry.health_check_timeout_seconds < 0:
            problems.append(f"{name}: negative health_check_timeout_seconds")
        if len(entry.message.encode()) > MESSAGE_MAX_BYTES:
            problems.append(f"{name}: a message of {len(entry.message.encode())} bytes (the kubelet cuts at 1024)")
    ctx.expect(not problems, "; ".join(problems))


@check(
    "HEA-004",
    "the stream repeats the full list more often than the devices' health timeout",
    tags=(*TAGS, "slow"),
    level=SHOULD,
    why="should: without repeats devices turn Unknown after their timeout, pods still run",
    rule=rules.HEALTH_TIMEOUT,
    reference=rules.cite(
        rules.protocol("device-health"), rules.protocol("driver-contract", "C14"), rules.HEALTH_INFO_GO, rules.KEP_4680
    ),
    needs=NEEDS,
)
async def repeats(ctx: CheckContext) -> None:
    stream = await watch(ctx, 1, FIRST_MESSAGE_WITHIN)
    limit = timeout_of(first(ctx, stream))
    with ctx.waiting(limit + MARGIN):  # a driver may declare a health timeout longer than --check-timeout
        again = await stream.wait_for(2, limit + MARGIN)
    ctx.expect(
        again,
        f"no second health message within {limit:g} s: the kubelet shows every device Unknown after {limit:g} s",
    )
    gap = stream.messages[1][0] - stream.messages[0][0]
    ctx.expect(gap < limit, f"the second health message came {gap:.1f} s after the first (timeout {limit:g} s)")
    ctx.expect(
        reported(stream.messages[1][1]) == reported(stream.messages[0][1]),
        "the repeated health message lists other devices than the first",
    )


@check(
    "HEA-005",
    "the node sees every published device's health (none Unknown) through its own stream",
    tags=TAGS,
    level=SHOULD,
    why="should: what HEA-002 causes, seen through the node; pods still run",
    rule=rules.HEALTH_COMPLETE_LIST,
    reference=rules.cite(rules.protocol("device-health"), rules.HEALTH_INFO_GO, rules.KEP_4680),
    needs=NEEDS,
)
async def node_view(ctx: CheckContext) -> None:
    cache = ctx.bed.node.health
    ctx.expect(cache is not None, "the node does not follow device health")
    assert cache is not None
    wanted = await published(ctx)

    def known() -> Sequence[str]:
        devices = {(d.pool_name, d.device_name): d for d in cache.devices(ctx.driver_name)}
        return [
            f"{p}/{d}" for p, d in sorted(wanted) if (p, d) not in devices or devices[p, d].health is Health.UNKNOWN
        ]

    try:
        await ctx.bed.until(lambda: not known(), timeout=NODE_VIEW_WITHIN, what="device health")
    except StateError:
        ctx.fail(f"the node's health view still lacks or shows Unknown: {list(known())}")
