"""Replaying a scenario: stage the testbed, run the steps in file order, evaluate each expectation, clean up.

Each action step has a timeout; each expectation its deadline. The first step that fails or
errs ends the replay (later steps are reported as skipped, since they build on it), and the
testbed stops every process and removes its work dir whatever happened (``keep`` keeps it).
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AbstractAsyncContextManager

import attrs

from kubelet_dra.kubelet.pluginmanager import SocketPhase
from kubelet_dra.peers.driver.knobs import lookup
from kubelet_dra.peers.errors import KubeletDRAError, UsageError
from kubelet_dra.peers.kube.client import KubeApiError
from kubelet_dra.peers.log import get_logger
from kubelet_dra.workbench import junit
from kubelet_dra.workbench.realnode import ManagerTestbed, RealKubeletOptions, RealManagerOptions, RealTestbed
from kubelet_dra.workbench.scenarios import onrealkubelet as realkubelet
from kubelet_dra.workbench.scenarios.cleanup import leave_cluster_clean
from kubelet_dra.workbench.scenarios.expectations import Verdict, evaluate
from kubelet_dra.workbench.scenarios.model import Condition, Scenario, Step
from kubelet_dra.workbench.scenarios.stage import Context
from kubelet_dra.workbench.scenarios.steps import ACTIONS
from kubelet_dra.workbench.tap import FaultProxy
from kubelet_dra.workbench.testbed import Testbed, TestbedOptions, objects
from kubelet_dra.workbench.testbed.machineload import DeadlineScale

ACTION = "action"
EXPECTATION = "expectation"
LOG_LINES = 8
STAGING_POLL = 0.05


@attrs.frozen
class StepResult:
    """The outcome of one action or one expectation; ``result`` is one of junit's passed/failed/error/skipped."""

    step: int
    name: str
    kind: str
    result: str
    seconds: float = 0.0
    message: str = ""
    details: str = ""
    line: int = 0
    """Where the step or expectation is written in the scenario file."""
    stretched: bool = False
    """An expectation that held only in the time a real driver was given past the file's ``within``."""


@attrs.frozen
class ScenarioResult:
    name: str
    path: str
    results: tuple[StepResult, ...]
    seconds: float
    error: str = ""
    """Why the scenario could not be staged at all (e.g. the driver command does not exist)."""
    workdir: str = ""
    """The work dir, when it was kept."""
    note: str = ""
    """What the report should say about how it ran (on a real kubelet: whose timings applied)."""
    skip: str = ""
    """Why it did not run at all: what it needs that the driver under test does not offer."""

    @property
    def passed(self) -> bool:
        """Nothing broke: every step and expectation passed or was not for this node (a skip after a failure comes
        with the failure); a scenario skipped for what the driver does not offer broke nothing either."""
        return not self.error and all(result.result in (junit.PASSED, junit.SKIPPED) for result in self.results)

    @property
    def outcome(self) -> str:
        return junit.SKIPPED if self.skip else junit.PASSED if self.passed else junit.FAILED

    @property
    def broken(self) -> list[StepResult]:
        return [result for result in self.results if result.result in (junit.FAILED, junit.ERROR)]


def skipped(scenario: Scenario, why: str) -> ScenarioResult:
    """The result of a scenario not replayed, because it needs what the driver under test does not offer."""
    return ScenarioResult(name=scenario.name, path=scenario.path, results=(), seconds=0.0, skip=why)


@attrs.frozen
class ReplayOptions:
    faults: Mapping[str, Mapping[str, str]] = attrs.field(factory=dict)
    """Driver id → fault knobs set at each start of that reference driver (overriding the file)."""
    keep: bool = False
    on_step: Callable[[Step], None] | None = None
    """Called when a step begins (the live view)."""
    on_result: Callable[[StepResult], None] | None = None
    real_kubelet: RealKubeletOptions | None = None
    """Play the node with this real kubelet instead of the simulated one."""
    real_manager: RealManagerOptions | None = None
    """With ``real_kubelet`` (whose release it is): play the node of a file with by-hand steps with the real
    kubelet's DRA manager (``kubelet_dra.workbench.realnode.managerbed``)."""
    deadline_scale: float | str = 1.0
    """Give each file's deadlines this factor more time (``Scenario.given_time``), or ``auto``: the machine's load
    when the file starts (``kubelet_dra.workbench.testbed.machineload``)."""
    observe: Callable[[Testbed], AbstractAsyncContextManager[object]] | None = None
    """Entered on the staged testbed before the scenario's objects and drivers, left after its last step while
    everything still runs (a trace of what the node did: ``kubelet_dra.workbench.fidelity``)."""


def parse_fault(text: str) -> tuple[str, str, str]:
    """``DRIVER_ID:KNOB=VALUE`` → its three parts; a malformed one is a usage error."""
    driver_id, _, rest = text.partition(":")
    knob, equals, value = rest.partition("=")
    if not (driver_id and knob and equals):
        raise UsageError(f"bad --fault {text!r}", fix="write DRIVER_ID:KNOB=VALUE, e.g. gpu:prepare-error=boom")
    return driver_id, knob, value


def check_faults(scenario: Scenario, faults: Mapping[str, Mapping[str, str]]) -> None:
    """Fault overrides must name a driver the scenario starts and a known knob with a valid value."""
    started = [driver.id for driver in scenario.drivers if not driver.external]
    for driver_id, knobs in faults.items():
        if driver_id not in started:
            raise UsageError(
                f"--fault names driver {driver_id!r}, which {scenario.name} does not start",
                where=scenario.path,
                fix=f"use one of: {', '.join(started) or 'none (every driver is external)'}",
            )
        for knob, value in knobs.items():
            lookup(knob).parse(value)


async def replay(scenario: Scenario, options: ReplayOptions | None = None) -> ScenarioResult:
    """Run ``scenario`` once; the result says which expectations held."""
    options = options or ReplayOptions()
    check_faults(scenario, options.faults)
    log = get_logger("scenario", scenario=scenario.name)
    started = time.monotonic()
    results: list[StepResult] = []
    bed_options = TestbedOptions(
        node_name=scenario.node.name,
        node=scenario.node.options,
        registry_dir=scenario.node.registry_dir,
        kubeconfig=scenario.node.kubeconfig or (options.real_kubelet and options.real_kubelet.kubeconfig),
        control_plane=scenario.node.control_plane,
        keep=options.keep,
    )
    note = ""
    bed: Testbed
    if options.real_kubelet is None:
        bed = Testbed(bed_options, proxies=FaultProxy)
    else:
        manager = options.real_manager if realkubelet.by_hand(scenario) else None
        realkubelet.check(scenario, options.real_kubelet.release(), manager=manager is not None)
        note = realkubelet.timing_note(scenario, manager=manager is not None)
        scenario = realkubelet.on_real_kubelet(scenario)
        if manager is None:
            bed = RealTestbed(bed_options, options.real_kubelet)
        else:
            bed = ManagerTestbed(bed_options, manager)
    scale = DeadlineScale.of(options.deadline_scale)
    scenario = scenario.given_time(scale.factor)
    note = "; ".join(filter(None, [note, scale.note()]))
    error = ""
    try:
        async with bed:
            ctx = Context(scenario, bed, options.faults)
            try:
                async with options.observe(bed) if options.observe else contextlib.nullcontext():
                    await _stage(ctx)
                    await _run_steps(ctx, options, results)
                broken = next((i for i, r in enumerate(results) if r.result in (junit.FAILED, junit.ERROR)), None)
                if broken is not None:
                    results[broken] = _with_logs(results[broken], ctx)
            finally:
                if not bed.embedded:  # a real cluster stays: the next scenario's node must not find this one's pods
                    await bed.stop_node()
                    deleted = await leave_cluster_clean(bed.kube, ctx.node_name, ctx.scenario.objects)
                    log.v(1).info("Left the cluster as it was", deleted=deleted)
    except (KubeletDRAError, KubeApiError, OSError) as err:
        error = f"cannot stage the scenario: {err}"
        log.error("Scenario could not be staged", err=err)
    finally:
        if not options.keep:
            shutil.rmtree(bed.workdir, ignore_errors=True)
    return ScenarioResult(
        name=scenario.name,
        path=scenario.path,
        results=tuple(results),
        seconds=time.monotonic() - started,
        error=error,
        workdir=str(bed.workdir) if options.keep else "",
        note=note,
    )


async def _stage(ctx: Context) -> None:
    for manifest in ctx.scenario.objects:
        await objects.apply(ctx.bed.kube, dict(manifest))
    started = [driver for driver in ctx.scenario.drivers if driver.start and not driver.external]
    for driver in started:
        await ctx.process(driver.id).start()
    await _drivers_ready(ctx, [driver.name for driver in started])


async def _drivers_ready(ctx: Context, names: list[str]) -> None:
    """Wait (up to ``REGISTRATION_WAIT``) until the node concluded each driver's registration handshake, either
    way (a failure is a scenario's fault: its retries' timing is the point), then until the registered ones
    published their devices: on either node the first pod must not race its drivers' start (a claim allocated
    before its devices are published fails scheduling first; a pod synced before its driver registered fails to
    prepare).

    Only the handshake is waited for, never the driver's connection: whether the node can reach the endpoint is
    what a scenario observes, and its timers (the wiping delay of an unreachable driver) run from the handshake,
    so a wait for the connection would eat the scenario's first seconds."""
    bed = ctx.bed
    if ctx.real is not None:
        await realkubelet.wait_registered(ctx.real, names)
        registered = {name for name in names if ctx.real.registered(name)}
    else:

        def handshaken(name: str) -> bool:
            return bool(bed.node.instances(name))

        async def settled() -> bool:
            states = bed.node.registrations()
            if any(state.phase == SocketPhase.IN_PROGRESS for state in states):
                return False
            failed = any(state.phase == SocketPhase.BACKOFF for state in states)
            return failed or all(handshaken(name) for name in names)

        await _until(settled)
        registered = {name for name in names if handshaken(name)}

    async def published() -> bool:
        slices = await objects.list_objects(bed.kube, "ResourceSlice")
        return not registered - {(item.get("spec") or {}).get("driver") for item in slices}

    await _until(published)


async def _until(ready: Callable[[], Awaitable[bool]]) -> None:
    deadline = time.monotonic() + realkubelet.REGISTRATION_WAIT
    while not await ready() and time.monotonic() < deadline:
        await asyncio.sleep(STAGING_POLL)


async def _run_steps(ctx: Context, options: ReplayOptions, results: list[StepResult]) -> None:
    log = get_logger("scenario", scenario=ctx.scenario.name).v(1)
    stopped = False
    for step in ctx.scenario.steps:
        if stopped:
            results.extend(_skipped(step))
            continue
        if options.on_step is not None:
            options.on_step(step)
        for result in await _run_step(ctx, step):
            results.append(result)
            log.info("Step done", step=result.name, result=result.result, seconds=round(result.seconds, 3))
            if options.on_result is not None:
                options.on_result(result)
            stopped = stopped or result.result in (junit.FAILED, junit.ERROR)


async def _run_step(ctx: Context, step: Step) -> list[StepResult]:
    if step.conditions:  # independent looks at the node: polled side by side, reported in file order
        not_here = realkubelet.NOT_CHECKED if ctx.real is not None else {}
        checked = [condition for condition in step.conditions if condition.kind not in not_here]
        verdicts = await asyncio.gather(*(evaluate(ctx, condition) for condition in checked))
        found = dict(zip(map(id, checked), verdicts, strict=True))
        return [_expectation(step, condition, found.get(id(condition)), not_here) for condition in step.conditions]
    started = time.monotonic()
    try:
        async with asyncio.timeout(step.timeout):
            outcome, message = junit.PASSED, await ACTIONS[step.action](ctx, step.args)
    except TimeoutError:
        outcome, message = junit.ERROR, f"did not finish within {step.timeout:g} s"
    except Exception as err:  # a step that breaks is reported; the replay still cleans up
        known = isinstance(err, KubeletDRAError | KubeApiError | OSError)
        outcome, message = junit.ERROR, str(err) if known else f"{type(err).__name__}: {err}"
    return [
        StepResult(step.index, step.name, ACTION, outcome, time.monotonic() - started, message, line=step.where.line)
    ]


def _expectation(step: Step, condition: Condition, verdict: Verdict | None, not_here: Mapping[str, str]) -> StepResult:
    """An expectation's result: its verdict, or skipped for why it is not checked on this node."""
    line = condition.where.line
    if verdict is None:
        return StepResult(
            step.index, condition.name, EXPECTATION, junit.SKIPPED, message=not_here[condition.kind], line=line
        )
    result = junit.PASSED if verdict.held else junit.FAILED
    return StepResult(
        step.index,
        condition.name,
        EXPECTATION,
        result,
        verdict.seconds,
        verdict.message,
        verdict.details,
        line,
        stretched=verdict.stretched,
    )


def _skipped(step: Step) -> list[StepResult]:
    names = [condition.name for condition in step.conditions] or [step.name]
    kind = EXPECTATION if step.conditions else ACTION
    return [
        StepResult(step.index, name, kind, junit.SKIPPED, message="an earlier step failed", line=step.where.line)
        for name in names
    ]


def _with_logs(result: StepResult, ctx: Context) -> StepResult:
    """The failing step's details plus the drivers' last log lines, which usually say why."""
    logs = [
        f"log of driver {driver_id} ({process.log_path.name}):\n{process.log_tail(LOG_LINES)}"
        for driver_id, process in ctx.processes.items()
        if process.starts
    ]
    if ctx.real is not None:
        logs.append(ctx.real.log_excerpt(LOG_LINES))
    return attrs.evolve(result, details="\n\n".join(filter(None, [result.details, *logs])))
