"""The crash soak's figures: the rows of its table, the table in a terminal, and the Markdown table of a results file
that benchmarks/README.md carries between markers (a test holds the page to the file)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from common import Figure
from rich.table import Table

if TYPE_CHECKING:
    from crash_soak import SoakRun


def rows(run: SoakRun) -> list[tuple[str, str, bool | None]]:
    """(figure, value, invariant held: None for a plain count)."""
    v = run.verdict
    return [
        ("cycles (seed)", f"{run.options.cycles} ({run.options.seed})", None),
        ("kill -9 of the node / of the driver", f"{run.kills.get('node', 0)} / {run.kills.get('driver', 0)}", None),
        ("pods created / deleted", f"{run.pods_created} / {run.pods_deleted}", None),
        ("… deleted while the node was down", str(run.deleted_while_node_down), None),
        ("… deleted with grace period 0", str(run.forced), None),
        ("NodePrepareResources calls / claims prepared", f"{v.prepare_calls} / {v.claims_prepared}", None),
        ("NodeUnprepareResources calls / claims unprepared", f"{v.unprepare_calls} / {v.claims_unprepared}", None),
        (
            "allowed repeats (after a kill, a failed call, a reconcile race)",
            f"{v.repeated_prepares} prepare, {v.repeated_unprepares} unprepare",
            None,
        ),
        ("lost claims", str(v.lost_claims), v.lost_claims == 0),
        ("double prepares", str(v.double_prepares), v.double_prepares == 0),
        ("double unprepares", str(v.double_unprepares), v.double_unprepares == 0),
        ("deleted pods' claims never unprepared", str(v.not_unprepared), v.not_unprepared == 0),
        ("claims left prepared in the driver", str(v.leaked_claims), v.leaked_claims == 0),
        ("leaked CDI specs", str(v.leaked_cdi_specs), v.leaked_cdi_specs == 0),
        ("deleted pods left in the API", str(v.deleted_pods_left), v.deleted_pods_left == 0),
        ("checkpoint valid", "yes" if v.checkpoint_valid else "no", v.checkpoint_valid),
        ("checkpoint entries not of a live pod", str(v.stale_checkpoint_entries), v.stale_checkpoint_entries == 0),
        ("tracebacks in the logs", str(v.tracebacks), v.tracebacks == 0),
        ("settled at the end", "yes" if run.settled else f"no, within {run.options.settle:g} s", None),
        ("wall time", f"{run.seconds:.0f} s", None),
    ]


def report(run: SoakRun) -> Table:
    table = Table(title="crash soak: kill -9 of the node and of the reference driver during pod churn")
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_column("invariant")
    for name, value, held in rows(run):
        table.add_row(name, value, {True: "[green]held[/green]", False: "[red]BROKEN[/red]", None: ""}[held])
    table.caption = "every figure from the driver's own records (its -v 6 log) and the state left at the end"
    return table


def figures(run: SoakRun) -> Sequence[Figure]:
    return [
        Figure("crash soak", name, value, "held" if held is not None else "", held) for name, value, held in rows(run)
    ]


def markdown(results: dict[str, Any]) -> str:
    """The results file's table as benchmarks/README.md shows it, with the run that made it."""
    lines = [
        f"`{results['command']}` on {results['date'][:10]}: {results['machine']} (load at start"
        f" {results['load_at_start']}), Python {results['python']}, kubelet {results['kubelet']}.",
        "",
        "| Figure | Value | Invariant |",
        "|---|---:|---|",
    ]
    lines += [f"| {name} | {value} | {_HELD[held]} |" for name, value, held in results["rows"]]
    return "\n".join(lines) + "\n"


_HELD = {True: "held", False: "**BROKEN**", None: ""}
