"""Benchmark of the two suites against the bundled reference driver: how long a user waits.

``conformance``: the whole conformance suite (``run_suite``, as ``kubelet-dra conformance``
runs it) against the reference driver started from its command line at its defaults (so it
republishes wiped slices after the kubeletplugin helper's 30 s, as Go drivers do), with health on
so the health checks run too. Target: at most 60 s on 2 cores.

``replay``: every scenario file in ``scenarios/`` replayed once (``kubelet-dra replay``), the
time of each and of the library.

``--smoke``: one check of four groups and one scenario file (about 6 s): what CI runs, so the script cannot rot.

Run: ``python benchmarks/suites_bench.py [--runs N] [--only conformance|replay] [--smoke]``
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections import defaultdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from kubelet_dra.peers import log
from kubelet_dra.workbench.conformance.checkcontext import SuiteOptions
from kubelet_dra.workbench.conformance.suiterunner import run_suite
from kubelet_dra.workbench.conformance.target import Selection, Target
from kubelet_dra.workbench.scenarios.loader import load
from kubelet_dra.workbench.scenarios.replayer import replay
from kubelet_dra.workbench.testbed import REFERENCE_DRIVER

TARGET_CONFORMANCE_SECONDS = 60.0
DRIVER = "gpu.example.com"
REFERENCE = REFERENCE_DRIVER.replace("{driver}", DRIVER) + " --devices 4 --health"
LIBRARY = Path(__file__).resolve().parent.parent / "scenarios"
SMOKE_CHECKS = ("REG-001", "PRE-001", "UNP-001", "HEA-001")
"""``--smoke``: a quick check of four groups, so the table has its per-group rows; no restart, no long wait."""
SMOKE_FILE = "pod-lifecycle"


async def conformance(runs: int, console: Console, selection: Selection | None = None) -> None:
    """The suite ``runs`` times; with a ``selection`` (``--smoke``) its last row claims no target."""
    totals: list[float] = []
    per_group: dict[str, list[float]] = defaultdict(list)
    outcome = ""
    for _ in range(runs):
        suite = await run_suite(Target(driver_cmd=REFERENCE), SuiteOptions(), selection)
        totals.append(suite.seconds)
        groups: dict[str, float] = defaultdict(float)
        for result in suite.results:
            groups[result.id.partition("-")[0]] += result.seconds
        for group, seconds in groups.items():
            per_group[group].append(seconds)
        outcome = ", ".join(f"{len(suite.ids(kind))} {kind}" for kind in ("passed", "skipped", "warning", "failed"))
    table = Table(title=f"kubelet-dra conformance against the reference driver ({runs} run(s): {outcome})")
    for column in ("Part", "Median", "Min", "Max"):
        table.add_column(column, justify="left" if column == "Part" else "right")
    for group, values in sorted(per_group.items()):
        table.add_row(f"checks {group}-*", *_seconds(values))
    met = "met" if statistics.median(totals) <= TARGET_CONFORMANCE_SECONDS else "NOT met"
    whole = f"whole suite (target ≤ {TARGET_CONFORMANCE_SECONDS:g} s: {met})"
    table.add_row(whole if selection is None else "the checks chosen (no target)", *_seconds(totals))
    console.print(table)


async def library(runs: int, console: Console, paths: list[Path]) -> None:
    times: dict[str, list[float]] = defaultdict(list)
    failed: set[str] = set()
    for _ in range(runs):
        for path in paths:
            result = await replay(load(path))
            times[path.stem].append(result.seconds)
            if not result.passed:
                failed.add(path.stem)
    table = Table(title=f"kubelet-dra replay of scenarios/ ({runs} run(s))")
    for column in ("Scenario", "Median", "Min", "Max"):
        table.add_column(column, justify="left" if column == "Scenario" else "right")
    for name, values in sorted(times.items(), key=lambda item: -statistics.median(item[1])):
        table.add_row(name + (" (FAILED)" if name in failed else ""), *_seconds(values))
    table.add_row("whole library", *_seconds([sum(run) for run in zip(*times.values(), strict=True)]))
    console.print(table)


def _seconds(values: list[float]) -> tuple[str, str, str]:
    return f"{statistics.median(values):.1f} s", f"{min(values):.1f} s", f"{max(values):.1f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="repetitions of each suite (default: %(default)s)")
    parser.add_argument("--only", choices=("conformance", "replay"), help="run one of the two")
    parser.add_argument(
        "--smoke",
        action="store_true",
        help=f"only checks {', '.join(SMOKE_CHECKS)} and scenarios/{SMOKE_FILE}.yaml (what CI runs)",
    )
    args = parser.parse_args()
    log.configure(0, open("/dev/null", "w"))  # noqa: SIM115  (the benchmark's own table is the output)
    console = Console()
    selection = Selection(focus=f"^({'|'.join(SMOKE_CHECKS)})$") if args.smoke else None
    started = time.monotonic()
    if args.only in (None, "conformance"):
        asyncio.run(conformance(args.runs, console, selection))
    if args.only in (None, "replay"):
        paths = [LIBRARY / f"{SMOKE_FILE}.yaml"] if args.smoke else sorted(LIBRARY.glob("*.yaml"))
        asyncio.run(library(args.runs, console, paths))
    console.print(f"benchmark took {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
