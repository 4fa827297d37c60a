"""The manager benchmark's figures: samples of each run, pooled per shape, and the table and figures they make.

Kept apart from ``manager_bench.py``, which runs the shapes, so that what is measured and how it is
reported can each be read alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
import breakdown
import common
from breakdown import Breakdown
from common import Figure, Percentiles, spread
from rich.table import Table

CONCURRENCY = (1, 16)
TARGET_RATIO = 1.2
REAL_KUBELET = "real kubelet 1.36.2"


@attrs.frozen
class Samples:
    prepare: list[float]
    unprepare: list[float]
    wall: float

    @property
    def cycles(self) -> list[float]:
        return [a + b for a, b in zip(self.prepare, self.unprepare, strict=True)]


@attrs.frozen
class Result:
    apiserver: str
    driver: str
    claims: int
    concurrency: int
    prepare: Percentiles
    unprepare: Percentiles
    cycle: Percentiles
    bare_cycle: Percentiles
    pods_per_second: float
    bare_pods_per_second: float
    run_cycle_p50: list[float]
    run_ratio: list[float]
    real: RealRow | None = None
    breakdown: tuple[Breakdown, ...] = ()

    @property
    def ratio(self) -> float:
        return self.cycle.p50 / self.bare_cycle.p50


@attrs.frozen
class RealRow:
    """The real kubelet's DRA manager on the same pod, driver and API server, in the same runs."""

    prepare: Percentiles
    unprepare: Percentiles
    cycle: Percentiles
    pods_per_second: float
    run_cycle_p50: list[float]
    run_ratio: list[float]
    """kubelet-dra's cycle p50 / the real kubelet's, per run."""


def pooled(runs: list[Samples], part: Callable[[Samples], list[float]]) -> Percentiles:
    return Percentiles.of([value for run in runs for value in part(run)])


def rate(runs: list[Samples]) -> float:
    return sum(len(run.prepare) for run in runs) / sum(run.wall for run in runs)


def real_row(real: list[Samples], manager_p50: list[float]) -> RealRow | None:
    if not real:
        return None
    real_p50 = [Percentiles.of(run.cycles).p50 for run in real]
    return RealRow(
        prepare=pooled(real, lambda run: run.prepare),
        unprepare=pooled(real, lambda run: run.unprepare),
        cycle=pooled(real, lambda run: run.cycles),
        pods_per_second=rate(real),
        run_cycle_p50=real_p50,
        run_ratio=[m / r for m, r in zip(manager_p50, real_p50, strict=True)],
    )


def summarize(
    which: str,
    driver: str,
    claims: int,
    concurrency: int,
    bare: list[Samples],
    manager: list[Samples],
    real: list[Samples],
) -> Result:
    manager_p50 = [Percentiles.of(run.cycles).p50 for run in manager]
    bare_p50 = [Percentiles.of(run.cycles).p50 for run in bare]
    return Result(
        apiserver=which,
        driver=driver,
        claims=claims,
        concurrency=concurrency,
        prepare=pooled(manager, lambda run: run.prepare),
        unprepare=pooled(manager, lambda run: run.unprepare),
        cycle=pooled(manager, lambda run: run.cycles),
        bare_cycle=pooled(bare, lambda run: run.cycles),
        pods_per_second=rate(manager),
        bare_pods_per_second=rate(bare),
        run_cycle_p50=manager_p50,
        run_ratio=[m / b for m, b in zip(manager_p50, bare_p50, strict=True)],
        real=real_row(real, manager_p50),
    )


COLUMNS = (
    *("API server", "driver", "claims", "pods at once", "manager", "prepare", "unprepare", "cycle", "bare cycle"),
    *("overhead", "pods/s (bare)"),
)
TITLE = "DRAManager prepare/unprepare per pod (ms: p50 / p95 / p99), checkpoint on"
CAPTION = (
    f"overhead: cycle p50 / bare client's, target ≤ {TARGET_RATIO}×; beside the {REAL_KUBELET}'s DRA manager"
    " (same pod, claims, driver and API server, runs alternating): cycle p50 / its p50 and p99 / its p99,"
    " target ≤ 1"
)


def rows(results: list[Result]) -> list[list[str]]:
    """Each shape's row of kubelet-dra, after the real kubelet's where it ran beside it."""
    found = []
    for r in results:
        shape = [r.apiserver, r.driver, str(r.claims), str(r.concurrency)]
        if r.real is not None:
            found.append(
                [*shape, REAL_KUBELET, r.real.prepare.ms(), r.real.unprepare.ms(), r.real.cycle.ms(), "", "", ""]
            )
        versus = (
            f", {r.cycle.p50 / r.real.cycle.p50:.2f}× / {r.cycle.p99 / r.real.cycle.p99:.2f}× real" if r.real else ""
        )
        found.append(
            [
                *shape,
                "kubelet-dra",
                r.prepare.ms(),
                r.unprepare.ms(),
                r.cycle.ms(),
                r.bare_cycle.ms(),
                f"{r.ratio:.2f}×{versus}",
                f"{r.pods_per_second:.0f} ({r.bare_pods_per_second:.0f})",
            ]
        )
    return found


def report(results: list[Result]) -> Table:
    table = Table(title=TITLE, caption=CAPTION)
    for column in COLUMNS:
        table.add_column(column, justify="right")
    for row in rows(results):
        table.add_row(*row)
    return table


def loaded(row: dict[str, Any]) -> Result:
    """A ``Result`` back from the form a results file holds it in (``attrs.asdict``)."""
    percentiles = {name: Percentiles(**row[name]) for name in ("prepare", "unprepare", "cycle", "bare_cycle")}
    real = (
        RealRow(
            **{**row["real"], **{name: Percentiles(**row["real"][name]) for name in ("prepare", "unprepare", "cycle")}}
        )
        if row["real"]
        else None
    )
    parts = tuple(Breakdown(**part) for part in row["breakdown"])
    return Result(**{**row, **percentiles, "real": real, "breakdown": parts})


def _markdown_table(columns: Sequence[str], cells: list[list[str]]) -> list[str]:
    return [common.markdown_row(columns), "|" + "---|" * len(columns), *map(common.markdown_row, cells)]


def markdown(results: dict[str, Any]) -> str:
    """The page's tables of a results file: the figures against their targets, every shape's row beside the
    bare client's and the real kubelet's, and where a 1-claim cycle goes on each manager."""
    found = [loaded(row) for row in results["results"]]
    lines = ["", f"{TITLE}; {CAPTION}.", "", *_markdown_table(COLUMNS, rows(found))]
    if split := [part for result in found for part in result.breakdown]:
        lines += ["", f"{breakdown.TITLE}; {breakdown.CAPTION}.", ""]
        lines += _markdown_table(breakdown.COLUMNS, [breakdown.cells(part) for part in split])
    return common.markdown(results) + "\n".join(lines) + "\n"


def figures(results: list[Result]) -> list[Figure]:
    found = []
    for r in results:
        where = f"{r.driver}, {r.apiserver} API server, {r.claims} claim(s), {r.concurrency} at once"
        if r.concurrency == 1 and r.claims == 1:
            found.append(
                Figure(
                    "manager",
                    f"overhead vs bare gRPC, {where}",
                    f"{r.ratio:.2f}×",
                    f"≤ {TARGET_RATIO}×",
                    r.ratio <= TARGET_RATIO,
                    f"{min(r.run_ratio):.2f} – {max(r.run_ratio):.2f}×",
                )
            )
            found.append(
                Figure(
                    "manager", f"cycle p50, {where}", f"{r.cycle.p50 * 1e3:.2f} ms", "", None, spread(r.run_cycle_p50)
                )
            )
        if r.real is not None:
            for name, ours, theirs in (("p50", r.cycle.p50, r.real.cycle.p50), ("p99", r.cycle.p99, r.real.cycle.p99)):
                found.append(
                    Figure(
                        "manager",
                        f"cycle {name} vs {REAL_KUBELET}, {where}",
                        f"{ours * 1e3:.2f} ms vs {theirs * 1e3:.2f} ms",
                        "≤ the real kubelet's, same run",
                        ours <= theirs,
                        f"p50 ratio per run {min(r.real.run_ratio):.2f} – {max(r.real.run_ratio):.2f}×"
                        if name == "p50"
                        else "",
                    )
                )
        if r.concurrency == max(CONCURRENCY):
            found.append(Figure("manager", f"throughput, {where}", f"{r.pods_per_second:.0f} pods/s"))
    return found
