"""Replay results for people (a table plus each broken expectation with what was seen), JSON and JUnit."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from kubelet_dra.workbench import junit
from kubelet_dra.workbench.scenarios.replayer import EXPECTATION, ScenarioResult, StepResult

SUITE = "kubelet-dra replay"
OUTCOMES = {
    junit.PASSED: "[green]passed[/green]",
    junit.FAILED: "[red]failed[/red]",
    junit.SKIPPED: "[yellow]skipped[/yellow]",
}
MARKS = {
    junit.PASSED: "[green]✓[/green]",
    junit.FAILED: "[red]✗[/red]",
    junit.ERROR: "[red]![/red]",
    junit.SKIPPED: "[dim]-[/dim]",
}


def line(result: StepResult) -> str:
    """One line of the live view (rich markup)."""
    took = f" [dim]({result.seconds:.2f} s)[/dim]" if result.result != junit.SKIPPED else ""
    return f"  {MARKS[result.result]} {escape(result.name)}{took}: {escape(result.message)}"


def summary(results: Sequence[ScenarioResult]) -> Table:
    table = Table(title=headline(results))
    # A name is never cut (the column is as wide as the longest); what broke first goes on a line of its own
    # under the name, folded in that width, instead of a column that takes room from every row.
    longest = max((len(result.name) for result in results), default=0)
    table.add_column("Scenario", overflow="fold", min_width=longest)
    table.add_column("Result", no_wrap=True)
    table.add_column("Held", justify="right", no_wrap=True)
    table.add_column("Took", justify="right", no_wrap=True)
    for result in results:
        expectations = [step for step in result.results if step.kind == EXPECTATION]
        held = sum(step.result == junit.PASSED for step in expectations)
        broken = result.broken
        table.add_row(
            escape(result.name),
            OUTCOMES[result.outcome],
            f"{held}/{len(expectations)}",
            f"{result.seconds:.1f} s",
        )
        if first := result.error or (broken[0].name if broken else ""):
            table.add_row(f"[red]  first broken:[/red] {escape(first)}")
        if result.skip:
            table.add_row(f"[dim]  skipped: {escape(result.skip)}[/dim]")
        if stretched := [step.name for step in result.results if step.stretched]:
            table.add_row(f"[dim]  waits stretched past the file's deadline: {escape(', '.join(stretched))}[/dim]")
    return table


def failures(result: ScenarioResult) -> str:
    """Plain text of everything that went wrong in ``result``: each broken step, its message and details."""
    parts = [f"{result.path}: {result.error}"] if result.error else []
    parts += [f"{result.path}: {result.note}"] if result.note else []
    for step in result.broken:
        where = f"{result.path}:{step.line}" if step.line else result.path
        parts.append(f"{where}: {step.name}: {step.message}" + (f"\n{step.details}" if step.details else ""))
    return "\n\n".join(parts)


def to_json(results: Sequence[ScenarioResult]) -> dict[str, Any]:
    return {
        "passed": all(result.passed for result in results),
        "scenarios": [
            {
                "name": result.name,
                "path": result.path,
                "passed": result.passed,
                "result": result.outcome,
                "skipped": result.skip,
                "seconds": round(result.seconds, 3),
                "error": result.error,
                "workdir": result.workdir,
                "note": result.note,
                "steps": [
                    {
                        "step": step.step,
                        "line": step.line,
                        "name": step.name,
                        "kind": step.kind,
                        "result": step.result,
                        "seconds": round(step.seconds, 3),
                        "message": step.message,
                        "details": step.details,
                        "stretched": step.stretched,
                    }
                    for step in result.results
                ],
            }
            for result in results
        ],
    }


def headline(results: Sequence[ScenarioResult]) -> str:
    skipped = sum(bool(result.skip) for result in results)
    passed = sum(result.passed for result in results) - skipped
    return f"kubelet-dra replay: {passed} of {len(results)} scenario(s) passed" + (
        f", {skipped} skipped (needs the driver does not offer)" if skipped else ""
    )


def cases(results: Sequence[ScenarioResult]) -> list[junit.Case]:
    """One test case per step and expectation, grouped by scenario (``classname``), each at its file and line;
    a staging error is one case."""
    found: list[junit.Case] = []
    for result in results:
        classname = f"scenario.{result.name}"
        if result.error:
            found.append(junit.Case("staging", classname, result.seconds, junit.ERROR, result.error, file=result.path))
        if result.skip:
            found.append(junit.Case("driver", classname, 0.0, junit.SKIPPED, result.skip, file=result.path))
        found += [
            junit.Case(
                step.name,
                classname,
                step.seconds,
                step.result,
                step.message,
                step.details,
                file=result.path,
                line=step.line,
            )
            for step in result.results
        ]
    return found


def write_junit(path: str | Path, results: Sequence[ScenarioResult]) -> Path:
    return junit.write(path, SUITE, cases(results))
