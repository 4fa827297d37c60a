"""``replay``'s run of the files: one at a time with a live view, or several at once (``--jobs``), each file's
lines printed together when it ends so that a log reads file by file."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

import attrs
from rich.markup import escape

from kubelet_dra.cli import output
from kubelet_dra.workbench.realnode import RealKubeletOptions, RealManagerOptions
from kubelet_dra.workbench.scenarios import replayreport as report
from kubelet_dra.workbench.scenarios.carryover import Carried
from kubelet_dra.workbench.scenarios.model import Scenario, Step
from kubelet_dra.workbench.scenarios.replayer import ReplayOptions, ScenarioResult, StepResult, replay, skipped


@attrs.frozen
class ReplayPlan:
    """How the files replay: the fault overrides, the node, the view and how many at once."""

    faults: dict[str, dict[str, str]]
    keep: bool = False
    live: bool = False
    real: RealKubeletOptions | None = None
    manager: RealManagerOptions | None = None
    jobs: int = 1
    deadline_scale: float | str = 1.0


def present_faults(faults: dict[str, dict[str, str]], scenario: Scenario) -> dict[str, dict[str, str]]:
    """The fault overrides for the drivers this scenario starts."""
    present = {driver.id for driver in scenario.drivers if not driver.external}
    return {driver_id: knobs for driver_id, knobs in faults.items() if driver_id in present}


async def replay_all(carried: list[Carried], plan: ReplayPlan) -> list[ScenarioResult]:
    """Every carried file's result, in the files' order."""
    gate = asyncio.Semaphore(plan.jobs)

    async def one(item: Carried) -> ScenarioResult:
        async with gate:
            return await _replay_one(item, plan)

    return list(await asyncio.gather(*(one(item) for item in carried)))


async def _replay_one(item: Carried, plan: ReplayPlan) -> ScenarioResult:
    scenario = item.scenario
    console = output.console()
    lines: list[str] = []
    show: Callable[[str], None] = console.print if plan.jobs == 1 else lines.append
    if item.skip:
        if plan.live:
            console.print(f"[bold]{escape(scenario.name)}[/bold] [yellow]skipped[/yellow]: {escape(item.skip)}")
        return skipped(scenario, item.skip)
    spinning = plan.live and plan.jobs == 1
    with console.status("") if spinning else contextlib.nullcontext() as spinner:

        def on_step(step: Step) -> None:
            if spinner is not None:
                spinner.update(step.name)

        def on_result(result: StepResult) -> None:
            show(report.line(result))

        if plan.live:
            show(f"[bold]{escape(scenario.name)}[/bold] [dim]({escape(scenario.path)})[/dim]")
        options = ReplayOptions(
            faults=present_faults(plan.faults, scenario),
            keep=plan.keep,
            on_step=on_step if spinning else None,
            on_result=on_result if plan.live else None,
            real_kubelet=plan.real,
            real_manager=plan.manager,
            deadline_scale=plan.deadline_scale,
        )
        result = await replay(scenario, options)
    if plan.live:
        if result.note:
            show(f"  [dim]{escape(result.note)}[/dim]")
        if result.error:
            show(f"  [red]![/red] {escape(result.error)}")
        if result.workdir:
            show(f"  [dim]work dir kept: {escape(result.workdir)}[/dim]")
        for line in lines:
            console.print(line)
    return result
