"""What a scenario becomes on the real kubelet: what it may not ask, and its deadlines on the real timing.

A real kubelet is seen only from outside (API server, the tap's call record, its checkpoint file),
so a step or expectation that reads or drives the simulated node's insides is refused, each one
named with its file and line. Its timing is compiled in: a scenario's ``timing`` block cannot be
applied, so every deadline grows by as much as the real constants exceed the shortened ones.
"""

from __future__ import annotations

import asyncio
import time
from operator import attrgetter
from typing import Any

import attrs

from kubelet_dra.kubelet.cm.dra.plugin import PluginMap
from kubelet_dra.kubelet.kubelet import NodeOptions
from kubelet_dra.peers.controlplane.cluster import pod_claim_names, pod_claims_created
from kubelet_dra.peers.errors import UsageError
from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.workbench.realnode import RealTestbed
from kubelet_dra.workbench.scenarios.model import Condition, Scenario, Step
from kubelet_dra.workbench.testbed import objects

REAL_TIMING: dict[str, tuple[str, float]] = {
    "wiping_delay": ("wipingDelay", 30.0),
    "call_timeout": ("callTimeout", 45.0),
    "reconcile_period": ("reconcilePeriod", 60.0),
    "pod_sync.sync_frequency": ("syncFrequency", 90.0),
}
"""The simulated node's option → (the timing key, the real kubelet 1.36's constant in seconds): the ResourceSlice
wiping delay, the DRA call timeout, the DRA manager's reconcile period, and the pod sync that retries a failed
prepare: the pod worker's resync (``--sync-frequency``), 1 minute plus up to 50 % jitter (a failed prepare is
retried only then or when the pod changes; kubelet 1.36.2 did not retry one within 62 s)."""

REFUSED_ACTIONS = {
    "prepare": "calls the simulated node's DRA manager by hand",
    "unprepare": "calls the simulated node's DRA manager by hand",
}
"""Steps no real kubelet can be told to do; the real DRA manager (``--real-manager``) can."""
NO_POD_WORKER = "the real DRA manager runs no pod worker (only a whole kubelet syncs a pod bound to the node)"
NO_WIPE_LOG = "reads the real kubelet's wipe timers from its log; the real DRA manager's log is not read"
ONE_DRIVER = "the real DRA manager's trace does not name the driver of a DRA call (a by-hand file has one driver)"
NOT_CHECKED = {
    "diagnosis": (
        "kubelet-dra's own registration diagnosis, which the real kubelet has not (the line it logs for each failure"
        " is held to the diagnosis in docs/debug.md): checked on kubelet-dra only"
    ),
}
"""Expectations about what only kubelet-dra has: skipped on the real kubelet with this reason (the rest of the file
runs, and ``--compare`` compares what both nodes show)."""
REFUSED_KEYS = {
    ("restartNode", "kubeletVersion"): "changes the simulated node's release (a real kubelet is one binary)",
    ("restartNode", "featureGates"): "changes the simulated node's feature gates",
}


def by_hand(scenario: Scenario) -> bool:
    """Whether ``scenario`` calls the DRA manager by hand: its other side is then the real DRA manager."""
    return any(step.action in REFUSED_ACTIONS for step in scenario.steps)


def refusals(scenario: Scenario, release: str, *, manager: bool = False) -> list[str]:
    """Each step or expectation of ``scenario`` the real kubelet ``release`` cannot run, with where and why; with
    ``manager``, those the real DRA manager of that release cannot (by-hand steps, but no pod worker)."""
    found: list[str] = _manager_refusals(scenario) if manager else []
    options = scenario.node.options
    if scenario.node.release_pinned and options.release.name != release:
        found.append(f"{scenario.path}: node.kubeletVersion {options.release.name} is not the real kubelet's {release}")
    simulated_only = {
        "legacyServices": (options.legacy_services, "the simulated node's ≤1.32 services (a 1.36 kubelet has none)"),
        "pluginMap": (options.plugin_map != PluginMap.INSTANCES, "the simulated node's plugin map variants"),
        "health": (
            not options.health,
            "off: the simulated node's switch (a kubelet's is its ResourceHealthStatus gate)",
        ),
    }
    found += [f"{scenario.path}: node.{key}: {why}" for key, (used, why) in simulated_only.items() if used]
    for step in scenario.steps:
        where = f"{scenario.path}:{step.where.line}"
        if step.action in REFUSED_ACTIONS and not manager:
            found.append(f"{where}: step {step.action} {REFUSED_ACTIONS[step.action]}")
        if isinstance(step.args, dict):
            found += [
                f"{where}: step {step.action} with {key} {why}"
                for (action, key), why in REFUSED_KEYS.items()
                if action == step.action and key in step.args
            ]
        for condition in step.conditions:
            where = f"{scenario.path}:{condition.where.line}"
            found += [
                f"{where}: expectation {condition.kind} with {key} {why}"
                for (kind, key), why in REFUSED_KEYS.items()
                if kind == condition.kind and key in condition.args
            ]
    return found


def _manager_refusals(scenario: Scenario) -> list[str]:
    """What the real DRA manager cannot run: a pod bound to the node (no pod worker syncs it), two drivers."""
    node = scenario.node.name
    manifests = [(scenario.path, manifest) for manifest in scenario.objects] + [
        (f"{scenario.path}:{step.where.line}", manifest)
        for step in scenario.steps
        if step.action == "apply"
        for manifest in step.args
    ]
    found = [
        f"{where}: Pod {(manifest.get('metadata') or {}).get('name')} is bound to {node}: {NO_POD_WORKER}"
        for where, manifest in manifests
        if manifest.get("kind") == "Pod" and (manifest.get("spec") or {}).get("nodeName") == node
    ]
    found += [
        f"{scenario.path}:{step.where.line}: step createPod {step.args['name']} is bound to {node}: {NO_POD_WORKER}"
        for step in scenario.steps
        if step.action == "createPod" and step.args.get("node", node) == node
    ]
    if len(scenario.drivers) > 1:
        found.append(f"{scenario.path}: drivers: {len(scenario.drivers)} drivers: {ONE_DRIVER}")
    found += [
        f"{scenario.path}:{condition.where.line}: expectation wipe: {NO_WIPE_LOG}"
        for step in scenario.steps
        for condition in step.conditions
        if condition.kind == "wipe"
    ]
    return found


def check(scenario: Scenario, release: str, *, manager: bool = False) -> None:
    """Refuse ``scenario`` for the real kubelet ``release`` (or its DRA manager), naming every step and expectation
    it cannot run."""
    found = refusals(scenario, release, manager=manager)
    if found:
        node = "the real DRA manager of" if manager else "the real kubelet"
        raise UsageError(
            f"scenario {scenario.name} cannot run on {node} {release}: " + "; ".join(found),
            where=scenario.path,
            fix="replay this file on the simulated node (without --real-kubelet)",
        )


def extra_seconds(scenario: Scenario) -> float:
    """How much longer the real kubelet may take than the scenario's timing allows: the largest amount by which
    a real constant exceeds the value the scenario's simulated node runs with."""
    options = scenario.node.options
    return max((real - attrgetter(field)(options) for field, (_, real) in REAL_TIMING.items()), default=0.0)


MANAGER_TIMING = ("wiping_delay", "call_timeout")
"""The constants the real DRA manager runs on: it has no pod worker, and its reconcile loop is off."""


def timing_note(scenario: Scenario, *, manager: bool = False) -> str:
    """What the report says about the timings: the real constants in force and the scenario's values they replace."""
    options = scenario.node.options
    parts = [
        f"{key} {real:g} s"
        + (f" (scenario: {attrgetter(field)(options):g} s)" if attrgetter(field)(options) != real else "")
        for field, (key, real) in REAL_TIMING.items()
        if not manager or field in MANAGER_TIMING
    ]
    node = "real DRA manager" if manager else "real kubelet"
    return f"{node} timings: {', '.join(parts)}; deadlines extended by {extra_seconds(scenario):g} s"


def on_real_kubelet(scenario: Scenario) -> Scenario:
    """``scenario`` with each action timeout and expectation deadline extended to the real kubelet's timing, and
    each hold longer than the scenario's wiping delay (one that outlasts it: "slices are kept") extended to outlast
    the real one."""
    extra = extra_seconds(scenario)
    delay = scenario.node.options.wiping_delay
    wipe_extra = max(REAL_TIMING["wiping_delay"][1] - delay, 0.0)

    def longer(condition: Condition) -> Condition:
        hold = condition.hold + wipe_extra if condition.hold > delay else condition.hold
        return attrs.evolve(condition, within=condition.within + extra, hold=hold)

    def step(original: Step) -> Step:
        conditions = tuple(longer(condition) for condition in original.conditions)
        return attrs.evolve(original, timeout=original.timeout + extra, conditions=conditions)

    return attrs.evolve(scenario, steps=tuple(step(original) for original in scenario.steps))


KUBELET_CLOCK = ("wiping_delay", "call_timeout", "reconcile_period", "pod_sync")
"""The simulated node's options a scenario's ``timing`` shortens; their defaults are the real kubelet's constants."""


def on_kubelet_clock(scenario: Scenario) -> Scenario:
    """``scenario`` as kubelet-dra replays it beside the real kubelet on one clock: the real kubelet's constants in
    place of the file's timing (wiping delay, call timeout, reconcile period, pod-worker back-off and resync, the
    plugin manager's 1 s reconcile loop) and the deadlines the real kubelet gets (``on_real_kubelet``), so both
    nodes see the same world at each step."""
    real = NodeOptions()
    constants = {field: getattr(real, field) for field in KUBELET_CLOCK}
    extended = on_real_kubelet(scenario)
    options = attrs.evolve(scenario.node.options, kubelet_timing=True, **constants)
    return attrs.evolve(extended, node=attrs.evolve(extended.node, options=options))


REGISTRATION_WAIT = 10.0


async def wait_registered(bed: RealTestbed, driver_names: list[str]) -> None:
    """Give the kubelet's plugin watcher time to register the drivers started at staging.

    The simulated node registers a driver within milliseconds; the real kubelet takes a second or
    more, and a pod it syncs meanwhile fails ("DRA driver ... is not registered") and waits for its
    resync. A driver that is meant not to register (a fault) is waited for ``REGISTRATION_WAIT`` at most."""
    deadline = time.monotonic() + REGISTRATION_WAIT
    while any(bed.registered(name) == 0 for name in driver_names) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)


CLAIMS_WAIT = 10.0


async def claims_reserved(kube: KubeClient, pod: dict[str, Any]) -> bool:
    """Whether every claim of ``pod`` exists and is reserved for it, as the API server has them now."""
    namespace, uid = pod["metadata"]["namespace"], pod["metadata"]["uid"]
    current = await objects.get(kube, "Pod", pod["metadata"]["name"], namespace)
    if current is None or not pod_claims_created(current):
        return False
    names = pod_claim_names(current)
    if len(names) < len(current["spec"].get("resourceClaims") or []):
        return False
    for name in names:
        claim = await objects.get(kube, "ResourceClaim", name, namespace) or {}
        if not any(entry.get("uid") == uid for entry in (claim.get("status") or {}).get("reservedFor") or []):
            return False
    return True


async def wait_for_reservation(kube: KubeClient, pod: dict[str, Any]) -> str:
    """Wait until the pod's claims are allocated and reserved, which the offline control plane marks on the pod
    (its claims-reserved annotation, the change a cluster's binding would be), so the next step finds the pod
    synced by the real kubelet. A pod whose claims are not reserved within ``CLAIMS_WAIT`` is reported."""
    if not pod["spec"].get("resourceClaims"):
        return ""
    deadline = time.monotonic() + CLAIMS_WAIT
    while not await claims_reserved(kube, pod):
        if time.monotonic() > deadline:
            return f"; claims not reserved within {CLAIMS_WAIT:g} s: pod left for the kubelet's resync"
        await asyncio.sleep(0.05)
    return "; claims reserved: the control plane annotated the pod"
