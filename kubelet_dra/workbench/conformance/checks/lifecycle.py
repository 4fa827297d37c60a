"""LIF: the driver through pods, restarts and stops (docs/protocol.md).

A DaemonSet driver is restarted on upgrades and crashes, the kubelet restarts under it, the API
server goes away for a while; pods come and go concurrently throughout. The driver must remove
its sockets when stopped, register again when started, keep what it prepared across its own
restart (the kubelet still unprepares those claims later), survive a second registration cycle
with the startup wipe of its slices, and serve concurrent pods. Disruptive checks restore the
driver running and registered, whatever their outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Mapping
from typing import Any

from kubelet_dra.peers.errors import StateError
from kubelet_dra.workbench.conformance import rules
from kubelet_dra.workbench.conformance.checkcontext import POD_TIMEOUT, CheckContext, call_failed
from kubelet_dra.workbench.conformance.framework import EMBEDDED, MUST, RESTART, check
from kubelet_dra.workbench.conformance.steps.claimsteps import (
    claim_label,
    device_summary,
    prepared,
    require_claims,
    unprepared,
)
from kubelet_dra.workbench.conformance.steps.restarts import kubelet_restart, restore, usable
from kubelet_dra.workbench.testbed import DriverProcess, objects

TAGS = ("lifecycle",)
DISRUPTIVE = (*TAGS, "disruptive")
CONCURRENT_PODS = 3
DEREGISTER_WITHIN = 5.0


def process(ctx: CheckContext) -> DriverProcess:
    ctx.expect(ctx.driver is not None, "the suite did not start the driver")
    assert ctx.driver is not None
    return ctx.driver


async def restarted(ctx: CheckContext, driver: DriverProcess, *, kill: bool = False) -> None:
    """Restart the driver and wait until the node registered the new process, not just still lists the old."""
    before = ctx.bed.node.plugins.instances(ctx.driver_name)
    await driver.restart(kill=kill)
    if problem := await usable(ctx, replacing=before):
        how = "a crash and a new start" if kill else "a restart"
        ctx.fail(f"{ctx.driver_name} was not registered again after {how} ({problem})")


def unprepared_by_node(ctx: CheckContext, claims: list[Mapping[str, Any]]) -> list[str]:
    """The claims the node has not (successfully) unprepared since the check began."""
    done = set()
    for call in ctx.calls("NodeUnprepareResources"):
        if call.status == "OK" and isinstance(call.response, dict):
            done |= {uid for uid, entry in (call.response.get("claims") or {}).items() if not entry.get("error")}
    return [claim_label(claim) for claim in claims if claim["metadata"]["uid"] not in done]


async def pod_cycle(ctx: CheckContext, pods: int, claims: int) -> None:
    """Start ``pods`` pods with ``claims`` claims each at once, wait until all run, delete them all at once,
    and expect the node to have unprepared every claim through the driver."""
    await require_claims(ctx, pods * claims)
    started = await asyncio.gather(*(ctx.run_pod(claims, running=False) for _ in range(pods)))
    running = await asyncio.gather(*(ctx.wait_prepared(pod) for pod in started))
    generated = [claim for pod in running for claim in await ctx.pod_claims(pod)]
    ctx.expect(len(generated) == pods * claims, f"the pods have {len(generated)} claims, not {pods * claims}")
    await finish(ctx, running, generated)


async def finish(ctx: CheckContext, pods: list[dict[str, Any]], claims: list[Mapping[str, Any]]) -> None:
    """Delete ``pods`` and wait until the node finished them, failing at the first failed unprepare (the
    kubelet would keep the pods Terminating, F15); every claim must have been unprepared without error."""
    for pod in pods:
        await objects.delete(ctx.bed.kube, "Pod", pod["metadata"]["name"])

    async def finished() -> bool:
        failed = [
            f"{call.status} {call.details}".strip() if call.status != "OK" else str(call.response)
            for call in ctx.calls("NodeUnprepareResources")
            if call_failed(call)
        ]
        if failed:
            ctx.fail(f"the node's NodeUnprepareResources failed (the pod stays Terminating, F15): {failed[0]}")
        return all([await objects.get(ctx.bed.kube, "Pod", pod["metadata"]["name"]) is None for pod in pods])

    try:
        await ctx.bed.until(finished, timeout=POD_TIMEOUT, what="pods finished", interval=0.1)
    except StateError:
        ctx.fail(f"the pods were not finished within {POD_TIMEOUT:g} s (F15: a hanging unprepare keeps them)")
    left = unprepared_by_node(ctx, claims)
    ctx.expect(not left, f"the node did not get an unprepare without error for claim(s) {left}")


@check(
    "LIF-001",
    "a pod with two claims runs, and deleting it unprepares both",
    tags=(*TAGS, "prepare", "unprepare"),
    level=MUST,
    why="a failed prepare keeps the pod Pending, a failed unprepare keeps it Terminating (F15)",
    rule=rules.POD_LIFECYCLE,
    reference=rules.cite(rules.protocol("dra-manager"), rules.DRA_MANAGER_GO),
)
async def pod_with_two_claims(ctx: CheckContext) -> None:
    await pod_cycle(ctx, pods=1, claims=2)


@check(
    "LIF-002",
    f"{CONCURRENT_PODS} pods started and deleted at the same time all run and finish",
    tags=(*TAGS, "prepare", "unprepare"),
    level=MUST,
    why="pod workers call concurrently; a driver that serialises badly fails pods",
    rule=rules.CONCURRENT_CALLS,
    reference=rules.cite(rules.protocol("driver-contract", "C12"), rules.protocol("dra-manager"), rules.DRA_MANAGER_GO),
)
async def concurrent_pods(ctx: CheckContext) -> None:
    await pod_cycle(ctx, pods=CONCURRENT_PODS, claims=1)


@check(
    "LIF-003",
    "a gracefully stopped driver removes both its sockets, and the node deregisters it",
    tags=DISRUPTIVE,
    level=MUST,
    why="the helper's contract for rolling updates; a stale socket keeps a dead instance registered",
    rule=rules.SOCKETS_REMOVED,
    reference=rules.cite(
        rules.protocol("driver-contract", "C16"), rules.protocol("registration"), rules.OPERATION_GENERATOR_GO
    ),
    needs=(RESTART,),
)
async def sockets_removed(ctx: CheckContext) -> None:
    driver = process(ctx)
    restore(ctx)
    sockets = {"registration socket": ctx.capabilities.socket_path, "service socket": ctx.capabilities.endpoint}
    await driver.stop()
    left = [f"{what} {path}" for what, path in sockets.items() if path and os.path.exists(path)]
    ctx.expect(
        not left,
        f"after SIGTERM the driver left {', '.join(left)}: the node keeps a registered but dead driver (C16)",
    )
    try:
        await ctx.bed.until(
            lambda: not ctx.bed.node.plugins.usable(ctx.driver_name), timeout=DEREGISTER_WITHIN, what="deregistered"
        )
    except StateError:
        ctx.fail(f"the node still lists {ctx.driver_name} as usable {DEREGISTER_WITHIN:g} s after it stopped")


@check(
    "LIF-004",
    "a restarted driver registers again and prepares claims",
    tags=DISRUPTIVE,
    level=MUST,
    why="every upgrade restarts the driver; a driver that does not register again stops the node's pods",
    rule=rules.DRIVER_RESTART,
    reference=rules.cite(rules.protocol("driver-contract", "C17"), rules.protocol("registration"), rules.RECONCILER_GO),
    needs=(RESTART,),
)
async def restart(ctx: CheckContext) -> None:
    driver = process(ctx)
    restore(ctx)
    await restarted(ctx, driver)
    await prepared(ctx, await ctx.allocated_claim(1))


@check(
    "LIF-005",
    "claims prepared before a driver restart are prepared the same after it, and unprepared",
    tags=(*DISRUPTIVE, "prepare", "unprepare"),
    level=MUST,
    why=("the kubelet unprepares claims prepared before the restart; losing them leaks devices or fails unprepare"),
    rule=rules.CLAIMS_ACROSS_RESTART,
    reference=rules.cite(
        rules.protocol("dra-manager"),
        rules.protocol("dra-plugin-manager"),
        rules.DRA_MANAGER_GO,
        rules.DRA_PLUGIN_MANAGER_GO,
    ),
    needs=(RESTART,),
)
async def prepared_survive_restart(ctx: CheckContext) -> None:
    driver = process(ctx)
    restore(ctx)
    claim = await ctx.allocated_claim(1)
    uid = claim["metadata"]["uid"]
    before = device_summary((await prepared(ctx, claim))[uid])
    await restarted(ctx, driver)
    after = device_summary((await prepared(ctx, claim))[uid])
    ctx.expect(after == before, f"after the restart the claim was prepared with {after}, before with {before}")
    await unprepared(ctx, claim, why=" (prepared before the driver restarted)")


@check(
    "LIF-006",
    "a driver that crashed (SIGKILL, sockets left behind) registers again when started",
    tags=DISRUPTIVE,
    level=MUST,
    why="a crash leaves sockets behind; the new process must take over the path",
    rule=rules.DRIVER_RESTART,
    reference=rules.cite(
        rules.protocol("driver-contract", "C16"),
        rules.protocol("dra-plugin-manager"),
        rules.protocol("failure-modes", "F2"),
        rules.DRA_PLUGIN_MANAGER_GO,
    ),
    needs=(RESTART,),
)
async def crash(ctx: CheckContext) -> None:
    driver = process(ctx)
    restore(ctx)
    await restarted(ctx, driver, kill=True)
    await prepared(ctx, await ctx.allocated_claim(1))


@check(
    "LIF-007",
    "after a kubelet restart the driver registers again and republishes its wiped slices",
    tags=(*DISRUPTIVE, "slow"),
    level=MUST,
    why="every kubelet start re-registers and wipes slices; without both nothing schedules",
    rule=rules.REREGISTRATION,
    reference=rules.cite(
        rules.protocol("driver-contract", "C17"),
        rules.protocol("registration"),
        rules.protocol("dra-plugin-manager"),
        rules.protocol("failure-modes", "F14"),
        rules.RECONCILER_GO,
        rules.DRA_PLUGIN_MANAGER_GO,
    ),
)
async def node_restart(ctx: CheckContext) -> None:
    await ctx.require_accepted()  # before the restart: a check blocked by a refused claim returns at once
    restart = await kubelet_restart(ctx)
    ctx.expect(
        not restart.registration,
        f"{ctx.driver_name} was not registered again after the kubelet restarted ({restart.registration})",
    )
    restart.expect_republished(ctx)
    await prepared(ctx, await ctx.allocated_claim(1))


@check(
    "LIF-008",
    "a pod running across a driver restart is deleted cleanly (its claim unprepared)",
    tags=(*DISRUPTIVE, "unprepare"),
    level=MUST,
    why="a pod across a driver restart must still finish (F15)",
    rule=rules.POD_LIFECYCLE,
    reference=rules.cite(rules.protocol("dra-manager"), rules.protocol("failure-modes", "F15"), rules.DRA_MANAGER_GO),
    needs=(RESTART,),
)
async def pod_across_restart(ctx: CheckContext) -> None:
    driver = process(ctx)
    restore(ctx)
    pod = await ctx.wait_prepared(await ctx.run_pod(1, running=False))
    claims = await ctx.pod_claims(pod)
    await restarted(ctx, driver)
    await finish(ctx, [pod], claims)


@check(
    "LIF-009",
    "the driver prepares claims again after the API server was restarted",
    tags=DISRUPTIVE,
    level=MUST,
    why="the helper reads each claim from the API server; it must recover from an API outage",
    rule=rules.CLAIMS_FROM_API,
    reference=rules.cite(rules.protocol("driver-helper"), rules.KUBELETPLUGIN_GO),
    needs=(EMBEDDED,),
)
async def apiserver_restart(ctx: CheckContext) -> None:
    await ctx.bed.stop_apiserver()
    ctx.defer(ctx.bed.start_apiserver)
    await ctx.bed.start_apiserver()
    claim = await ctx.allocated_claim(1)
    await prepared(ctx, claim)


@check(
    "LIF-010",
    "after a pod holding all devices that fit at once is deleted, a new pod with a new claim for them runs",
    tags=(*TAGS, "prepare", "unprepare"),
    level=MUST,
    why="KEP-5970 behaviour 7: devices given back by a deleted pod must serve the next one",
    rule=rules.RESOURCE_REUSE,
    reference=rules.cite(rules.protocol("dra-manager"), rules.DRA_MANAGER_GO, rules.KEP_5970),
)
async def resource_reuse(ctx: CheckContext) -> None:
    count = await ctx.devices_at_once()
    first = await ctx.wait_prepared(await ctx.run_pod(1, devices=count, running=False))
    await released(ctx, await ctx.pod_claims(first), [first])
    second = await ctx.wait_prepared(await ctx.run_pod(1, devices=count, running=False))
    claims = await ctx.pod_claims(second)
    ctx.expect(len(claims) == 1, f"the second pod has {len(claims)} claims, not 1")
    await released(ctx, claims, [second])


async def released(ctx: CheckContext, claims: list[dict[str, Any]], pods: list[dict[str, Any]]) -> None:
    """Finish ``pods`` and wait until the control plane deleted their generated ``claims``: the claims hold
    every device that fits, and the next pod (or check) can have them only once they are gone."""

    async def gone() -> bool:
        names = [claim["metadata"]["name"] for claim in claims]
        return all([await objects.get(ctx.bed.kube, "ResourceClaim", name) is None for name in names])

    await finish(ctx, pods, claims)
    with contextlib.suppress(StateError):  # the control plane's business: the next allocation says what is held
        await ctx.bed.until(gone, timeout=POD_TIMEOUT, what="the pod's claims deleted")
