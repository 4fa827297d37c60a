"""Benchmark of the two suites against the bundled reference driver: how long a user waits.

``conformance``: the whole conformance suite (``run_suite``, as ``kubelet-dra conformance
--reference-driver '--devices 4 --health'`` runs it) against the reference driver started from its
command line, otherwise at its defaults (so it republishes wiped slices after the kubeletplugin
helper's 30 s, as Go drivers do); with health on, the health checks run too. Target: at most 60 s on
2 cores.

``replay``: the scenario library replayed with the command the README gives, ``kubelet-dra replay
--library --jobs 4`` (``--jobs`` sets how many files at once; 1 is the command without it), in a
process of its own: its wall time, each file's time, the files held, skipped and failed.

``--smoke``: one check of four groups and one scenario file: what CI runs, so the script cannot rot.

Run: ``python benchmarks/suites_bench.py [--runs N] [--only conformance|replay] [--jobs N] [--smoke]
[--results FILE]``;
``--markdown RESULTS`` prints benchmarks/README.md's table of a results file.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import attrs
from common import REPO, Figure, add_results_arguments, load, print_markdown_and_exit, save_results, spread
from replay_drivers import counts, held_figure, replay
from rich.console import Console
from rich.table import Table

from kubelet_dra.peers import log
from kubelet_dra.workbench.conformance.checkcontext import SuiteOptions
from kubelet_dra.workbench.conformance.results import SuiteResult
from kubelet_dra.workbench.conformance.suiterunner import run_suite
from kubelet_dra.workbench.conformance.target import Selection, Target
from kubelet_dra.workbench.testbed import REFERENCE_DRIVER

TARGET_CONFORMANCE_SECONDS = 60.0
DRIVER = "gpu.example.com"
REFERENCE = REFERENCE_DRIVER.replace("{driver}", DRIVER) + " --devices 4 --health"
LIBRARY = REPO / "scenarios"
JOBS = 4
"""The README's ``replay --library --jobs 4``."""
OUTCOMES = ("passed", "skipped", "warning", "failed")
SMOKE_CHECKS = ("REG-001", "PRE-001", "UNP-001", "HEA-001")
"""``--smoke``: a quick check of four groups, so the table has its per-group rows; no restart, no long wait."""
SMOKE_FILE = "pod-lifecycle"


@attrs.frozen
class ConformanceRuns:
    """Every run's time and each check group's; the last run's results; the checks chosen, if not all."""

    totals: list[float]
    groups: dict[str, list[float]]
    last: SuiteResult
    selection: Selection | None = None


@attrs.frozen
class LibraryRuns:
    """Every run's wall time of the replay command and each file's time; the last run's report (``replay_drivers``)."""

    walls: list[float]
    files: dict[str, list[float]]
    last: dict[str, Any]


async def conformance(runs: int, selection: Selection | None = None) -> ConformanceRuns:
    totals: list[float] = []
    groups: dict[str, list[float]] = defaultdict(list)
    suite = None
    for _ in range(runs):
        suite = await run_suite(Target(driver_cmd=REFERENCE), SuiteOptions(), selection)
        totals.append(suite.seconds)
        for group, checks in _by_group(suite).items():
            groups[group].append(sum(result.seconds for result in checks))
    assert suite is not None
    return ConformanceRuns(totals, dict(groups), suite, selection)


def library(runs: int, jobs: int, paths: list[Path]) -> LibraryRuns:
    """``paths`` replayed by ``kubelet-dra replay --jobs N`` (every library file: what ``--library`` replays)."""
    walls: list[float] = []
    files: dict[str, list[float]] = defaultdict(list)
    report: dict[str, Any] = {}
    for _ in range(runs):
        report = replay("reference", paths, jobs)
        walls.append(report["seconds"])
        for name, entry in report["files"].items():
            files[name].append(entry["seconds"])
    return LibraryRuns(walls, dict(files), report)


def _by_group(suite: SuiteResult) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = defaultdict(list)
    for result in suite.results:
        found[result.id.partition("-")[0]].append(result)
    return found


def duration(seconds: float) -> str:
    """Seconds as a reader takes them in: a check of a few milliseconds does not read as 0.0 s."""
    return f"{seconds:.1f} s" if seconds >= 1 else f"{seconds * 1000:.0f} ms"


def _over_runs(values: list[float]) -> str:
    return f"runs {spread(values, 's', 1)}" if len(values) > 1 else ""


def conformance_figures(runs: ConformanceRuns) -> list[Figure]:
    total = statistics.median(runs.totals)
    tally = [str(len(runs.last.ids(outcome))) for outcome in OUTCOMES]
    whole = runs.selection is None
    found = [
        Figure(
            "suites",
            f"conformance against the reference driver, {'whole suite' if whole else 'the checks chosen'}",
            f"{total:.1f} s",
            f"≤ {TARGET_CONFORMANCE_SECONDS:g} s" if whole else "",
            total <= TARGET_CONFORMANCE_SECONDS if whole else None,
            _over_runs(runs.totals),
        ),
        Figure("suites", f"conformance checks {' / '.join(OUTCOMES)}", " / ".join(tally), "0 failed", tally[-1] == "0"),
    ]
    for group, checks in sorted(_by_group(runs.last).items()):
        slowest = max(checks, key=lambda result: result.seconds)
        count = f"{len(checks)} check" + ("s" if len(checks) != 1 else "")
        notes = [f"{count}, slowest {slowest.id} {duration(slowest.seconds)}", _over_runs(runs.groups[group])]
        found.append(
            Figure(
                "suites",
                f"conformance checks {group}-*",
                duration(statistics.median(runs.groups[group])),
                spread="; ".join(note for note in notes if note),
            )
        )
    return found


def library_figures(runs: LibraryRuns, jobs: int) -> list[Figure]:
    tally = counts(runs.last)
    whole = len(runs.files) == len(list(LIBRARY.glob("*.yaml")))
    what = "scenario library" if whole else "library files chosen"
    slowest = max(runs.files, key=lambda name: statistics.median(runs.files[name]))
    notes = [f"slowest {slowest} {duration(statistics.median(runs.files[slowest]))}", _over_runs(runs.walls)]
    return [
        held_figure("suites", f"{what}, {len(runs.files)} files", tally),
        Figure(
            "suites",
            f"{what}, wall time of `kubelet-dra replay {'--library' if whole else 'FILES'} --jobs {jobs}`",
            f"{statistics.median(runs.walls):.1f} s",
            spread="; ".join(note for note in notes if note),
        ),
    ]


def _seconds(values: list[float]) -> tuple[str, str, str]:
    return duration(statistics.median(values)), duration(min(values)), duration(max(values))


def conformance_table(runs: ConformanceRuns) -> Table:
    outcome = ", ".join(f"{len(runs.last.ids(kind))} {kind}" for kind in OUTCOMES)
    table = Table(title=f"kubelet-dra conformance against the reference driver ({len(runs.totals)} run(s): {outcome})")
    for column in ("Part", "Median", "Min", "Max"):
        table.add_column(column, justify="left" if column == "Part" else "right")
    for group, values in sorted(runs.groups.items()):
        table.add_row(f"checks {group}-*", *_seconds(values))
    met = "met" if statistics.median(runs.totals) <= TARGET_CONFORMANCE_SECONDS else "NOT met"
    whole = f"whole suite (target ≤ {TARGET_CONFORMANCE_SECONDS:g} s: {met})"
    table.add_row(whole if runs.selection is None else "the checks chosen (no target)", *_seconds(runs.totals))
    return table


def library_table(runs: LibraryRuns, jobs: int) -> Table:
    table = Table(title=f"kubelet-dra replay --library --jobs {jobs} ({len(runs.walls)} run(s))")
    for column in ("Scenario", "Median", "Min", "Max"):
        table.add_column(column, justify="left" if column == "Scenario" else "right")
    for name, values in sorted(runs.files.items(), key=lambda item: -statistics.median(item[1])):
        failed = runs.last["files"][name]["result"] == "failed"
        table.add_row(name + (" (FAILED)" if failed else ""), *_seconds(values))
    table.add_row("whole library", *_seconds(runs.walls))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="repetitions of each suite (default: %(default)s)")
    parser.add_argument("--only", choices=("conformance", "replay"), help="run one of the two")
    parser.add_argument("--jobs", type=int, default=JOBS, help="library files at once (default: %(default)s)")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"only checks {', '.join(SMOKE_CHECKS)} and scenarios/{SMOKE_FILE}.yaml (what CI runs)",
    )
    add_results_arguments(parser)
    args = parser.parse_args()
    print_markdown_and_exit(args)
    log.configure(0, open("/dev/null", "w"))  # noqa: SIM115  (the benchmark's own table is the output)
    console, load_at_start, started = Console(), load(), time.monotonic()
    document: dict[str, Any] = {"runs": args.runs}
    found: list[Figure] = []
    if args.only in (None, "conformance"):
        selection = Selection(focus=f"^({'|'.join(SMOKE_CHECKS)})$") if args.smoke else None
        suite = asyncio.run(conformance(args.runs, selection))
        console.print(conformance_table(suite))
        found += conformance_figures(suite)
        checks = {result.id: [result.result, round(result.seconds, 3)] for result in suite.last.results}
        document["conformance"] = {"seconds": suite.totals, "checks": checks}
    if args.only in (None, "replay"):
        paths = [LIBRARY / f"{SMOKE_FILE}.yaml"] if args.smoke else sorted(LIBRARY.glob("*.yaml"))
        replayed = library(args.runs, args.jobs, paths)
        console.print(library_table(replayed, args.jobs))
        found += library_figures(replayed, args.jobs)
        document["library"] = {"jobs": args.jobs, "seconds": replayed.walls, "files": replayed.last["files"]}
    save_results(args.results, "suites_bench.py", document, found, load_at_start)
    console.print(f"benchmark took {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
