"""The actions a scenario step performs, one small function each, looked up by the step's key.

``wait`` and ``expect`` are not here: they evaluate conditions (``expectations.py``). Each action
returns a short text of what it did for the live view and the report.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from kubelet_dra.kubelet.release import RELEASES
from kubelet_dra.peers.controlplane.scheduling import mark_claims_reserved
from kubelet_dra.peers.driver.knobs import written
from kubelet_dra.peers.errors import StateError
from kubelet_dra.workbench.realnode import ManagerTestbed
from kubelet_dra.workbench.scenarios import onrealkubelet as realkubelet
from kubelet_dra.workbench.scenarios.model import seconds
from kubelet_dra.workbench.scenarios.stage import Context
from kubelet_dra.workbench.testbed import manifests, objects
from kubelet_dra.workbench.testbed.objects import DEFAULT_NAMESPACE

Action = Callable[[Context, Any], Awaitable[str]]


class ActionFailed(StateError):
    """A step's action did not do what the scenario asked (e.g. prepare succeeded where an error was expected)."""


async def apply(ctx: Context, manifests_: list[dict[str, Any]]) -> str:
    for manifest in manifests_:
        await objects.apply(ctx.bed.kube, manifest)
    return ", ".join(f"{m['kind']}/{m['metadata']['name']}" for m in manifests_)


async def delete(ctx: Context, targets: list[dict[str, Any]]) -> str:
    for target in targets:
        await objects.delete(ctx.bed.kube, target["kind"], target["name"], target.get("namespace"))
    return ", ".join(f"{t['kind']}/{t['name']}" for t in targets)


async def create_pod(ctx: Context, args: dict[str, Any]) -> str:
    pod = manifests.pod(
        args["name"],
        args.get("node", ctx.node_name),
        claims=args.get("claims"),
        templates=args.get("templates"),
        containers=args.get("containers", ["main"]),
        namespace=args.get("namespace", DEFAULT_NAMESPACE),
    )
    stored = await objects.apply(ctx.bed.kube, pod)
    # with no control plane, the scenario reserves the claims itself in a later step
    waits = ctx.real is not None and ctx.bed.options.control_plane
    reserved = await realkubelet.wait_for_reservation(ctx.bed.kube, stored) if waits else ""
    return f"pod {args['name']} uid {stored['metadata']['uid']}{reserved}"


async def delete_pod(ctx: Context, args: dict[str, Any]) -> str:
    grace = 0 if args.get("force") else None
    found = await objects.delete(ctx.bed.kube, "Pod", args["pod"], args.get("namespace"), grace=grace)
    return f"pod {args['pod']} " + ("deleted" if found else "did not exist")


async def reserve(ctx: Context, args: dict[str, Any]) -> str:
    namespace = args.get("namespace") or DEFAULT_NAMESPACE
    pod = await ctx.pod(args)
    claim = await objects.get(ctx.bed.kube, "ResourceClaim", args["claim"], namespace)
    if pod is None or claim is None:
        raise ActionFailed(
            f"cannot reserve: {'pod ' + args['pod'] if pod is None else 'claim ' + args['claim']} missing"
        )
    status = claim.get("status") or {}
    reference = {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
    status = {**status, "reservedFor": [*(status.get("reservedFor") or []), reference]}
    await objects.write_status(ctx.bed.kube, {**claim, "apiVersion": "resource.k8s.io/v1"}, status)
    if await realkubelet.claims_reserved(ctx.bed.kube, pod):  # as the control plane marks a pod it has placed
        await mark_claims_reserved(ctx.bed.kube, pod["metadata"]["namespace"], pod["metadata"]["name"])
        return f"claim {args['claim']} reserved for pod {args['pod']}; all its claims reserved: pod annotated"
    return f"claim {args['claim']} reserved for pod {args['pod']}"


async def start(ctx: Context, driver_id: str) -> str:
    process = await ctx.start_process(driver_id)
    return f"pid {process.pid}"


async def stop(ctx: Context, driver_id: str) -> str:
    return f"exit code {await ctx.process(driver_id).stop()}"


async def kill(ctx: Context, driver_id: str) -> str:
    return f"exit code {await ctx.process(driver_id).kill()}"


async def restart(ctx: Context, driver_id: str) -> str:
    process = await ctx.start_process(driver_id, restart=True)
    return f"pid {process.pid}"


def _startup_wipe(ctx: Context) -> str:
    """What the new node's start-up wipe did (the testbed's start waits for it), for the live view."""
    if ctx.real is not None:
        return ctx.real.start_note()
    wipe = ctx.bed.node.startup_wipe
    if wipe is None:
        return "no start-up wipe without an API server"
    outcome = wipe.result()
    if not outcome.done:
        return "start-up wipe gave up"
    return f"start-up wipe {'would delete' if outcome.dry_run else 'deleted'} {outcome.deleted} ResourceSlice(s)"


async def restart_node(ctx: Context, args: dict[str, Any] | None) -> str:
    """A kubelet restart; with ``kubeletVersion`` an upgrade or downgrade to that release (gates off unless given)."""
    args = args or {}
    crashed = "crashed; " if args.get("crash") else ""
    if "kubeletVersion" not in args:
        await ctx.bed.restart_node(crash=bool(args.get("crash")))
        return f"{crashed}checkpoint kept; {_startup_wipe(ctx)}"
    release = RELEASES[args["kubeletVersion"]]
    gate = bool((args.get("featureGates") or {}).get("DRAOptionalNodeOperations"))
    options = attrs.evolve(ctx.bed.options.node, release=release, optional_node_operations=gate)
    await ctx.bed.restart_node(options, crash=bool(args.get("crash")))
    return f"{crashed}now kubelet {release.version}; checkpoint kept; {_startup_wipe(ctx)}"


async def stop_node(ctx: Context, args: dict[str, Any] | None) -> str:
    """Stop the kubelet; with ``crash`` kill it (SIGKILL; the simulated node keeps only what it had written)."""
    crash = bool((args or {}).get("crash"))
    await ctx.bed.stop_node(crash=crash)
    return "crashed" if crash else "stopped"


async def start_node(ctx: Context, _: None) -> str:
    await ctx.bed.start_node()
    return f"started; {_startup_wipe(ctx)}"


async def stop_apiserver(ctx: Context, _: None) -> str:
    await ctx.bed.stop_apiserver()
    return "stopped"


async def start_apiserver(ctx: Context, _: None) -> str:
    await ctx.bed.start_apiserver()
    return "started"


async def _manager_call(ctx: Context, args: dict[str, Any], unprepare: bool) -> str:
    pod = await ctx.pod(args)
    if pod is None:
        raise ActionFailed(f"pod {args['pod']} does not exist")
    if isinstance(ctx.bed, ManagerTestbed):  # the real DRA manager, one run of it on the node's checkpoint
        error = await ctx.bed.by_hand(pod, unprepare=unprepare)
    else:
        error = await _simulated_call(ctx, pod, unprepare)
    wanted = args.get("error")
    if wanted is not None and wanted not in error:
        raise ActionFailed(f"expected an error containing {wanted!r}, got " + (repr(error) if error else "success"))
    if wanted is None and error:
        raise ActionFailed(f"failed: {error}")
    return f"error: {error}" if error else "ok"


async def _simulated_call(ctx: Context, pod: dict[str, Any], unprepare: bool) -> str:
    manager = ctx.bed.node.manager
    assert manager is not None, "the testbed's node always has a state dir"
    call = manager.unprepare_resources if unprepare else manager.prepare_resources
    try:
        await call(pod)
    except Exception as err:  # the manager's errors are what this step is about
        return str(err)
    return ""


async def prepare(ctx: Context, args: dict[str, Any]) -> str:
    return await _manager_call(ctx, args, unprepare=False)


async def unprepare(ctx: Context, args: dict[str, Any]) -> str:
    return await _manager_call(ctx, args, unprepare=True)


async def fault(ctx: Context, args: dict[str, Any]) -> str:
    process = ctx.process(args["driver"])
    knobs: dict[str, Any] = {}
    if "clear" in args:
        knobs = await process.clear_faults(*args["clear"])
    if "set" in args:
        knobs = await process.set_faults({knob: written(value) for knob, value in args["set"].items()})
    return "knobs " + (", ".join(f"{knob}={value}" for knob, value in knobs.items()) or "none")


async def health(ctx: Context, args: dict[str, Any]) -> str:
    states = await ctx.process(args["driver"]).set_health(args["devices"], args.get("message", ""))
    return f"health {states}"


async def remove_socket(ctx: Context, args: dict[str, Any]) -> str:
    ctx.remove_socket(args["driver"], args["socket"])
    return f"{args['socket']} socket removed"


async def restore_socket(ctx: Context, args: dict[str, Any]) -> str:
    ctx.restore_socket(args["driver"], args["socket"])
    return f"{args['socket']} socket re-created"


async def sleep(_: Context, duration: float | str) -> str:
    await asyncio.sleep(seconds(duration))
    return f"slept {seconds(duration):g} s"


ACTIONS: dict[str, Action] = {
    "apply": apply,
    "delete": delete,
    "createPod": create_pod,
    "deletePod": delete_pod,
    "reserve": reserve,
    "start": start,
    "stop": stop,
    "kill": kill,
    "restart": restart,
    "restartNode": restart_node,
    "stopNode": stop_node,
    "startNode": start_node,
    "stopApiServer": stop_apiserver,
    "startApiServer": start_apiserver,
    "prepare": prepare,
    "unprepare": unprepare,
    "fault": fault,
    "health": health,
    "removeSocket": remove_socket,
    "restoreSocket": restore_socket,
    "sleep": sleep,
}
