"""Expectations: one check per kind, polled until it holds or its deadline passes.

A check looks once and returns a ``Look``: whether it holds, what was expected and what was
seen (e.g. the recorded calls), so a failure report needs nothing else. ``evaluate`` does the
polling: until the condition holds (``within``), then, with ``hold``, that it keeps holding.
"""

from __future__ import annotations

import asyncio
import fnmatch
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import attrs

from kubelet_dra.kubelet.cm.dra.plugin import CallRecord
from kubelet_dra.kubelet.cm.dra.state.checkpoint import Checkpoint, ClaimInfoState, decode
from kubelet_dra.workbench.scenarios.model import Condition
from kubelet_dra.workbench.scenarios.stage import Context
from kubelet_dra.workbench.testbed import cdispecs, objects
from kubelet_dra.workbench.testbed.objects import DEFAULT_NAMESPACE

POLL_INTERVAL = 0.05
NOT_CREATED = (
    "no CreateContainer of it in the runtime's log yet (cri.log: the CDI devices are read from Kubernetes'"
    " fake CRI, -v 1 or more)"
)
SHOWN_CALLS = 15


@attrs.frozen
class Look:
    """One look at the node: ``ok`` when the condition holds; ``seen`` says what was there instead."""

    ok: bool
    expected: str
    seen: str
    details: str = ""


@attrs.frozen
class Verdict:
    held: bool
    seconds: float
    message: str
    details: str = ""
    stretched: bool = False
    """Held only after the file's ``within``, in the time a real driver was given (``Condition.stretch``)."""


Check = Callable[[Context, Mapping[str, Any]], Awaitable[Look]]


async def evaluate(ctx: Context, condition: Condition) -> Verdict:
    """Poll ``condition`` until it holds (then for ``hold`` more seconds) or its deadline passes."""
    check = CHECKS[condition.kind]
    started = time.monotonic()
    longest = max(condition.within, condition.stretch)
    while not (look := await _look(check, ctx, condition.args)).ok:
        if time.monotonic() - started >= longest:
            waited = f"{condition.within:g} s, stretched to {longest:g} s" if longest > condition.within else ""
            return _broken(look, f"not within {waited or f'{condition.within:g} s'}", started)
        await asyncio.sleep(POLL_INTERVAL)
    held_from = time.monotonic()
    late = held_from - started > condition.within
    while time.monotonic() - held_from < condition.hold:
        await asyncio.sleep(POLL_INTERVAL)
        look = await _look(check, ctx, condition.args)
        if not look.ok:
            return _broken(look, f"held for only {time.monotonic() - held_from:.2f} of {condition.hold:g} s", started)
    stretched = f" (held after {held_from - started:.1f} s, past the file's {condition.within:g} s: stretched)"
    return Verdict(True, time.monotonic() - started, look.seen + (stretched if late else ""), look.details, late)


async def _look(check: Check, ctx: Context, args: Mapping[str, Any]) -> Look:
    """One look; an API server that is down, a stopped node or a claim not created yet is seen, not a crash."""
    try:
        return await check(ctx, args)
    except Exception as err:  # whatever stops the look is what the report should show
        return Look(False, "", f"cannot look: {err}")


def _broken(look: Look, when: str, started: float) -> Verdict:
    message = f"expected {look.expected} ({when}); saw {look.seen}"
    return Verdict(False, time.monotonic() - started, message, look.details)


def _compare(wanted: Mapping[str, Any], actual: Mapping[str, Any]) -> tuple[bool, str, str]:
    """The fields of ``wanted`` against ``actual``: (all equal, expected text, seen text)."""
    ok = all(actual.get(key) == value for key, value in wanted.items())
    return ok, _fields(wanted), _fields({key: actual.get(key) for key in wanted})


def _fields(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={_text(value)}" for key, value in values.items())


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple | set | frozenset):
        return "[" + ",".join(map(str, value)) + "]"
    return str(value)


# --- registration ---


async def registration(ctx: Context, args: Mapping[str, Any]) -> Look:
    name = ctx.driver_name(args["driver"])
    if ctx.real is not None:  # what the node accepted and can reach, and the service it chose, seen from outside
        count = ctx.real.registered(name)
        usable = count > 0 and ctx.real.reachable(name)
        actual = {"registered": usable, "service": ctx.real.chosen_service(name), "instances": count}
        wanted = {
            "registered": True,
            **{key: args[key] for key in ("registered", "service", "instances") if key in args},
        }
        ok, expected, seen = _compare(wanted, actual)
        return Look(ok, f"{name} {expected}", f"{seen} ({ctx.real.seen_from})")
    node = ctx.bed.node
    instances = ctx.registered_instances(name)
    actual = {
        "registered": any(instance.connected for instance in instances),
        "service": instances[0].chosen_service if instances else None,
        "instances": len(instances),
    }
    wanted = {"registered": True, **{key: args[key] for key in ("registered", "service", "instances") if key in args}}
    ok, expected, seen = _compare(wanted, actual)
    sockets = "; ".join(f"{s.socket_path} {s.phase} {s.last_error}".strip() for s in node.registrations())
    return Look(ok, f"{name} {expected}", f"{seen} (sockets: {sockets or 'none'})")


async def diagnosis(ctx: Context, args: Mapping[str, Any]) -> Look:
    name = ctx.driver_name(args["driver"])
    diagnoses = ctx.bed.node.diagnoses()
    found = [seen for socket, seen in diagnoses.items() if socket.rpartition("/")[2].startswith(name)]
    ids = sorted({seen.id for seen in found})
    seen = "; ".join(f"{d.id} {d.symptom}: {d.message}" for d in found) or "no diagnosis"
    return Look(args["id"] in ids, f"diagnosis {args['id']} for {name}", seen)


# --- gRPC calls ---


def _call_fields(record: CallRecord) -> dict[str, Any]:
    return {
        "method": record.method.rpartition("/")[2],
        "status": record.status,
        "claims": sorted(claim.get("name", "") for claim in record.request.get("claims") or []),
    }


def _call_matches(wanted: Mapping[str, Any], record: CallRecord) -> bool:
    fields = _call_fields(record)
    return all(fields[key] == (sorted(value) if key == "claims" else value) for key, value in wanted.items())


def _calls_text(records: Sequence[CallRecord]) -> str:
    lines = [
        f"  #{r.request_id} {r.method.rpartition('/')[2]} claims={_text(_call_fields(r)['claims'])} {r.status}"
        f" {r.duration * 1000:.0f} ms {r.details}".rstrip()
        for r in records
        if not r.streaming
    ]
    earlier = f"  ({len(lines) - SHOWN_CALLS} earlier calls not shown)\n" if len(lines) > SHOWN_CALLS else ""
    return "recorded calls:\n" + earlier + ("\n".join(lines[-SHOWN_CALLS:]) or "  (none)")


async def calls(ctx: Context, args: Mapping[str, Any]) -> Look:
    name = ctx.driver_name(args["driver"])
    # a health stream is recorded when it ends; it counts only where its method is asked for by name
    records = [
        record
        for record in ctx.bed.calls(driver=name)
        if not record.streaming or _call_fields(record)["method"] == args.get("method")
    ]
    details = _calls_text(records)
    if "sequence" in args:
        return _sequence(args["sequence"], args.get("order", "exact"), records, details)
    wanted = {key: args[key] for key in ("method", "status", "claims") if key in args}
    matching = [record for record in records if _call_matches(wanted, record)]
    what = " ".join([name, _fields(wanted)]).strip()
    checks: list[tuple[bool, str, str]] = []
    if "count" in args:
        checks.append((len(matching) == args["count"], f"count={args['count']}", f"count={len(matching)}"))
    if "min" in args or "count" not in args:
        least = args.get("min", 1)
        checks.append((len(matching) >= least, f"count>={least}", f"count={len(matching)}"))
    if "endpoints" in args:
        endpoints = sorted({record.endpoint for record in matching})
        checks.append((len(endpoints) == args["endpoints"], f"endpoints={args['endpoints']}", f"endpoints={endpoints}"))
    ok = all(check[0] for check in checks)
    return Look(
        ok,
        f"calls {what} {' '.join(c[1] for c in checks)}",
        f"{' '.join(c[2] for c in checks)} matching",
        details,
    )


def _sequence(wanted: Sequence[Mapping[str, Any]], order: str, records: Sequence[CallRecord], details: str) -> Look:
    methods = {item["method"] for item in wanted}
    actual = [record for record in records if _call_fields(record)["method"] in methods]
    seen = [_call_fields(record) for record in actual]
    shown_seen = " → ".join(f"{s['method']} {s['status']}" for s in seen) or "none"
    shown_wanted = " → ".join(f"{w['method']} {w.get('status', '*')}" for w in wanted)
    if order == "exact":
        ok = len(actual) == len(wanted) and all(_call_matches(w, r) for w, r in zip(wanted, actual, strict=True))
    else:
        remaining = list(actual)
        for item in wanted:
            match = next((record for record in remaining if _call_matches(item, record)), None)
            if match is not None:
                remaining.remove(match)
        ok = len(actual) == len(wanted) and not remaining
    return Look(ok, f"calls in {order} order: {shown_wanted}", shown_seen, details)


# --- pods ---


async def pod(ctx: Context, args: Mapping[str, Any]) -> Look:
    current = await ctx.pod(args)
    phase = "Gone" if current is None else (current.get("status") or {}).get("phase", "Pending")
    actual: dict[str, Any] = {"phase": phase}
    if current is not None:
        actual["terminating"] = bool(current["metadata"].get("deletionTimestamp"))
        actual["health"] = _health(current)
    wanted = {key: args[key] for key in ("phase", "terminating", "health") if key in args}
    ok, expected, seen = _compare(wanted, actual)
    details = ""
    if "event" in args:
        events = await _events(ctx, args)
        event = args["event"]
        found = [e for e in events if e.get("reason") == event["reason"] and event.get("message", "") in e["message"]]
        ok = ok and bool(found)
        expected += f" event {event['reason']}" + (f" containing {event['message']!r}" if "message" in event else "")
        seen += f" events: {len(events)}"
        details = "events:\n" + ("\n".join(f"  {e.get('reason')}: {e.get('message')}" for e in events) or "  (none)")
    return Look(ok, f"pod {args['pod']} {expected}".strip(), seen, details)


def _health(pod: Mapping[str, Any]) -> str | None:
    """The one health all devices of the pod's containers report, ``mixed``, or ``None`` without devices."""
    states = {
        resource.get("health")
        for container in (pod.get("status") or {}).get("containerStatuses") or []
        for status in container.get("allocatedResourcesStatus") or []
        for resource in status.get("resources") or []
    }
    return None if not states else states.pop() if len(states) == 1 else "mixed"


async def _events(ctx: Context, args: Mapping[str, Any]) -> list[dict[str, Any]]:
    namespace = args.get("namespace") or DEFAULT_NAMESPACE
    selector = f"involvedObject.kind=Pod,involvedObject.name={args['pod']}"
    return await objects.list_objects(ctx.bed.kube, "Event", namespace, field_selector=selector)


# --- ResourceSlices ---


async def slices(ctx: Context, args: Mapping[str, Any]) -> Look:
    node = args.get("node", ctx.node_name)
    driver = ctx.driver_name(args["driver"]) if "driver" in args else args.get("driverName")
    selector = f"spec.nodeName={node}" + (f",spec.driver={driver}" if driver else "")
    items = await objects.list_objects(ctx.bed.kube, "ResourceSlice", field_selector=selector)
    present = args.get("present", True)
    ok = bool(items) == present and ("count" not in args or len(items) == args["count"])
    expected = f"ResourceSlices of node {node}" + (f" driver {driver}" if driver else "")
    expected += " present" if present else " absent"
    expected += f" count={args['count']}" if "count" in args else ""
    return Look(ok, expected, f"{len(items)}: {', '.join(i['metadata']['name'] for i in items) or 'none'}")


# --- claims, checkpoint, CDI ---


async def claim(ctx: Context, args: Mapping[str, Any]) -> Look:
    namespace = args.get("namespace") or DEFAULT_NAMESPACE
    name = args.get("name") or await _pod_claim_name(ctx, args)
    if name is None:
        return Look(False, f"the claim {args.get('podClaim', '')} of pod {args['pod']}", "no such claim yet")
    current = await objects.get(ctx.bed.kube, "ResourceClaim", name, namespace)
    status = (current or {}).get("status") or {}
    actual = {"allocated": bool(status.get("allocation")), "reserved": bool(status.get("reservedFor"))}
    if "prepared" in args and ctx.real is not None:  # a real kubelet's prepared claims are in its checkpoint
        actual["prepared"] = any(entry.claim_name == name for entry in _checkpoint_entries(ctx))
    elif "prepared" in args:
        manager = ctx.bed.node.manager
        cached = manager.cache.get(namespace, name) if manager is not None else None
        actual["prepared"] = bool(cached and cached.prepared)
    wanted = {key: args[key] for key in ("allocated", "reserved", "prepared") if key in args}
    ok, expected, seen = _compare(wanted, actual)
    if current is None:
        return Look(False, f"claim {name} {expected}", "the claim does not exist")
    return Look(ok, f"claim {name} {expected}", seen)


async def _pod_claim_name(ctx: Context, args: Mapping[str, Any]) -> str | None:
    current = await ctx.pod(args)
    statuses = ((current or {}).get("status") or {}).get("resourceClaimStatuses") or []
    wanted = args.get("podClaim")
    names = [s.get("resourceClaimName") for s in statuses if wanted is None or s.get("name") == wanted]
    if names and names[0]:
        return names[0]
    for reference in ((current or {}).get("spec") or {}).get("resourceClaims") or []:
        if (wanted is None or reference["name"] == wanted) and reference.get("resourceClaimName"):
            return reference["resourceClaimName"]
    return None


def _checkpoint_entries(ctx: Context) -> list[ClaimInfoState]:
    path = Checkpoint(ctx.bed.state_dir).path
    return decode(path.read_bytes(), where=str(path)) if path.exists() else []


async def checkpoint(ctx: Context, args: Mapping[str, Any]) -> Look:
    entries = _checkpoint_entries(ctx)
    names = sorted(entry.claim_name for entry in entries)
    devices = [device for entry in entries for states in entry.driver_state.values() for device in states]
    share_ids = bool(devices) and all(device.share_id for device in devices)
    actual: dict[str, Any] = {"count": len(entries), "claims": names, "shareIDs": share_ids}
    wanted = {key: sorted(args[key]) if key == "claims" else args[key] for key in actual if key in args}
    ok, expected, seen = _compare(wanted, actual)
    shown = "; ".join(
        f"{entry.claim_name}: {', '.join(f'{d.pool_name}/{d.device_name} share={d.share_id}' for d in states)}"
        for entry in entries
        for states in entry.driver_state.values()
    )
    return Look(ok, f"checkpoint {expected}", seen, f"checkpoint: {shown or 'empty'}")


def _container_cdi(ctx: Context, pod: Mapping[str, Any], container: str) -> list[str] | None:
    """The node's CDI device IDs for the container: the simulated manager's answer, or what the real kubelet's
    runtime received in its CreateContainer (``None`` before that)."""
    if ctx.real is not None:
        return ctx.real.cdi_devices(pod["metadata"]["namespace"], pod["metadata"]["name"], container)
    manager = ctx.bed.node.manager
    return manager.get_resources(pod, container) if manager is not None else None


async def cdi(ctx: Context, args: Mapping[str, Any]) -> Look:
    current = await ctx.pod(args)
    if current is None:
        return Look(False, f"CDI devices of pod {args['pod']}", "the pod does not exist")
    container = args.get("container") or current["spec"]["containers"][0]["name"]
    ids = _container_cdi(ctx, current, container)
    if ids is None:
        return Look(False, f"CDI devices of {args['pod']}/{container}", NOT_CREATED if ctx.real else "no DRA manager")
    missing = [pattern for pattern in args.get("ids", ()) if not fnmatch.filter(ids, pattern)]
    unresolved = cdispecs.unresolved(ids, (ctx.bed.cdi_root,)) if args.get("resolve") else ""
    ok = not missing and not unresolved and ("count" not in args or len(ids) == args["count"])
    expected = f"CDI devices of {args['pod']}/{container}"
    expected += f" count={args['count']}" if "count" in args else ""
    expected += f" matching {', '.join(args['ids'])}" if "ids" in args else ""
    expected += " resolving in the CDI root" if args.get("resolve") else ""
    return Look(ok, expected, f"{len(ids)}: {', '.join(ids) or 'none'}" + (f" ({unresolved})" if unresolved else ""))


async def wipe(ctx: Context, args: Mapping[str, Any]) -> Look:
    name = ctx.driver_name(args["driver"])
    pending = ctx.real.kubelet.pending_wipes() if ctx.real is not None else list(ctx.bed.node.pending_wipes())
    wanted = args.get("pending", True)
    return Look(
        (name in pending) == wanted,
        f"wipe of {name}'s ResourceSlices {'pending' if wanted else 'not pending'}",
        f"pending wipes: {', '.join(pending) or 'none'}",
    )


async def blocked(ctx: Context, args: Mapping[str, Any]) -> Look:
    """The reference driver holds the call: a restart or a kill after this cuts it on any node."""
    held = (await ctx.process(args["driver"]).status()).get("blocked") or {}
    least = args.get("count", 1)
    seen = ", ".join(f"{method} {count}" for method, count in sorted(held.items())) or "none"
    return Look(held.get(args["method"], 0) >= least, f"{args['method']} calls blocked>={least}", f"blocked: {seen}")


CHECKS: dict[str, Check] = {
    "registration": registration,
    "diagnosis": diagnosis,
    "calls": calls,
    "pod": pod,
    "slices": slices,
    "claim": claim,
    "checkpoint": checkpoint,
    "cdi": cdi,
    "wipe": wipe,
    "blocked": blocked,
}
