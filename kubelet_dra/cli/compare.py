"""``kubelet-dra replay FILE… --compare --real-kubelet KUBELET --cri-cmd …``: each file on both nodes, compared.

Prints per scenario whether each replay held and, per column, "identical", the known difference
with its reason, or the unified diff from kubelet-dra's lines to the real kubelet's. Exit 0 when
every scenario held on both and no column differs beyond the known differences, 1 otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Mapping

from rich.markup import escape

from kubelet_dra.cli import output
from kubelet_dra.peers.errors import UsageError
from kubelet_dra.workbench.fidelity.both import Comparison, replay_both
from kubelet_dra.workbench.fidelity.comparison import DIFFERS, IDENTICAL, SIMULATED
from kubelet_dra.workbench.realnode import RealKubeletOptions, RealManagerOptions
from kubelet_dra.workbench.scenarios import replayreport as report
from kubelet_dra.workbench.scenarios.model import Scenario
from kubelet_dra.workbench.scenarios.replayer import ReplayOptions, ScenarioResult

Faults = Mapping[str, Mapping[str, str]]


def run(
    args: argparse.Namespace,
    scenarios: list[Scenario],
    faults: list[Faults],
    real: RealKubeletOptions | None,
    manager: RealManagerOptions | None = None,
) -> int:
    """Compare each of ``scenarios`` (with its own ``faults``, in the same order) on both nodes; a file that prepares
    by hand against ``manager`` when given."""
    assert real is not None, "--compare is refused without --real-kubelet"
    if args.junit:
        raise UsageError("--junit does not go with --compare", fix="use --output json for the comparison")
    release_name = real.release()  # kubelet-dra plays the binary's release, whatever --kubelet-version says
    text = args.output == "text"
    comparisons = []
    with output.quiet_logs(args.verbosity):
        for scenario, overrides in zip(scenarios, faults, strict=True):
            if text:
                output.console().print(f"[bold]{escape(scenario.name)}[/bold] [dim]({escape(scenario.path)})[/dim]")
            options = ReplayOptions(
                faults=overrides, keep=args.keep, real_manager=manager, deadline_scale=args.deadline_scale
            )
            comparison = asyncio.run(
                replay_both(scenario, real, options, release_name=release_name, timing=args.timing)
            )
            comparisons.append(comparison)
            if text:
                _print(comparison)
    accepted = sum(comparison.accepted for comparison in comparisons)
    if text:
        output.console().print(f"kubelet-dra replay --compare: {accepted} of {len(comparisons)} scenario(s) accepted")
    else:
        output.print_json(
            {"accepted": accepted == len(comparisons), "scenarios": [item.to_json() for item in comparisons]}
        )
    return 0 if accepted == len(comparisons) else 1


def _side(name: str, result: ScenarioResult) -> str:
    """One replay's verdict line, e.g. ``real DRA manager: held (4.1 s)``."""
    verdict = "[green]held[/green]" if result.passed else "[red]did not hold[/red]"
    kept = f" [dim](work dir kept: {escape(result.workdir)})[/dim]" if result.workdir else ""
    return f"  {name}: {verdict} ({result.seconds:.1f} s){kept}"


def _print(comparison: Comparison) -> None:
    console = output.console()
    console.print(f"  [dim]against the {comparison.oracle}[/dim]")
    for name, result in ((SIMULATED, comparison.simulated), (comparison.oracle, comparison.real)):
        console.print(_side(name, result))
        if not result.passed:
            console.print(report.failures(result), markup=False, highlight=False)
    for column in comparison.columns:
        if column.verdict == IDENTICAL:
            console.print(f"  {column.column}: [green]identical[/green]")
            continue
        if column.verdict == DIFFERS:
            console.print(f"  {column.column}: [red]differs[/red]")
        else:
            console.print(f"  {column.column}: known difference: {escape(column.known)}")
        console.print("\n".join(f"    {line}" for line in column.diff), markup=False, highlight=False)
