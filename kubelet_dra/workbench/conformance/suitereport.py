"""How a conformance run is shown: a live line per check, the final table, the calls of failed checks,
JSON and JUnit.

The live view and the final table are for people at a terminal; ``to_json`` and ``write_junit`` are
for CI. A failed check shows the gRPC calls it made, because a socket-level failure is best
understood from the exact requests and answers; a failed ``should`` check is shown the same way as
a warning, and is a passed JUnit case with a ``warning`` property. Runs of several kubelet releases
share one table (a result column per release) and one JUnit file (each case named with its release).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console, Group
from rich.markup import escape
from rich.status import Status
from rich.table import Table
from rich.text import Text

from kubelet_dra.kubelet.cm.dra.plugin import CallRecord
from kubelet_dra.workbench import junit
from kubelet_dra.workbench.conformance.framework import Check
from kubelet_dra.workbench.conformance.results import NOT_RUN, CheckResult, ReleaseRuns, counts
from kubelet_dra.workbench.junit import FAILED, PASSED, SKIPPED, WARNING

SUITE_NAME = "kubelet-dra conformance"
STYLE = {PASSED: "green", FAILED: "red", WARNING: "magenta", SKIPPED: "yellow", NOT_RUN: "dim"}
MARK = {PASSED: "✓", FAILED: "✗", WARNING: "!", SKIPPED: "-", NOT_RUN: "·"}
REASON_WIDTH = 100
MESSAGE_WIDTH = 600
"""Recorded messages are cut to this many characters in the text report (JSON keeps them whole)."""


class LiveView:
    """A spinner naming the running check, and a line per finished check above it."""

    def __init__(self, console: Console, total: int) -> None:
        self.console = console
        self.total = total
        self.done = 0
        self.counts = dict.fromkeys(STYLE, 0)
        self._status: Status | None = None

    def __enter__(self) -> LiveView:
        self._status = self.console.status("probing the driver")
        self._status.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._status is not None:
            self._status.__exit__(None, None, None)

    def started(self, check: Check) -> None:
        if self._status is not None:
            tally = " ".join(f"[{STYLE[r]}]{MARK[r]} {n}[/]" for r, n in self.counts.items())
            self._status.update(f"[{self.done + 1}/{self.total}] {tally}  {check.id} {escape(check.title)}")

    def finished(self, result: CheckResult) -> None:
        self.done += 1
        self.counts[result.result] += 1
        self.console.print(line(result))


def line(result: CheckResult) -> Text:
    """One finished check: mark, id, title, seconds, and the first line of the reason."""
    text = Text()
    text.append(f"{MARK[result.result]} ", style=STYLE[result.result])
    text.append(f"{result.id} ", style="bold")
    text.append(f"{result.check.level} ", style="dim")
    text.append(result.check.title)
    text.append(f" ({result.seconds:.2f} s)", style="dim")
    if result.reason:
        text.append(f"  {_first_line(result.reason)}", style=STYLE[result.result])
    for warning in result.warnings:
        text.append(f"\n    warning: {warning}", style="yellow")
    return text


def _first_line(text: str, width: int = REASON_WIDTH) -> str:
    first = text.splitlines()[0] if text else ""
    return first if len(first) <= width else first[: width - 1] + "…"


def summary(results: list[CheckResult]) -> str:
    """``60 passed, 0 failed, 3 warnings, 2 skipped``: warnings are the failed ``should`` checks; checks not run
    because of another's failure are counted with their causes."""
    tally = counts(results)
    text = (
        f"{tally[PASSED]} passed, {tally[FAILED]} failed, {tally[WARNING]} warning(s) (should), "
        f"{tally[SKIPPED]} skipped"
    )
    causes = sorted({result.cause for result in results if result.cause})
    return text + (f", {tally[NOT_RUN]} not run (because of {', '.join(causes)})" if causes else "")


def headline(runs: ReleaseRuns) -> str:
    """The run in one line: the driver, and per kubelet release the tally and how long it took."""
    suites = runs.suites
    name = next((suite.capabilities.driver_name for suite in suites if suite.capabilities.driver_name), "driver")
    per_release = "; ".join(
        f"kubelet {suite.kubelet_version}: {summary(list(suite.results))} in {suite.seconds:.1f} s" for suite in suites
    )
    strict = " (--strict: should-findings fail)" if any(suite.strict for suite in suites) else ""
    return f"{name}: {per_release}{strict}"


def table(runs: ReleaseRuns) -> Table:
    """The final table: id, level, title, a result column per kubelet release, duration, reason."""
    suites = runs.suites
    grid = Table(title=escape(headline(runs)), title_justify="left", expand=False)
    grid.add_column("id")
    grid.add_column("level")
    grid.add_column("title", overflow="fold")
    for suite in suites:
        grid.add_column(suite.kubelet_version if len(suites) > 1 else "result")
    grid.add_column("s", justify="right")
    grid.add_column("reason", overflow="fold")
    releases = [suite.by_id() for suite in suites]  # every run has the same selection of checks
    for result in suites[0].results:
        row = [release[result.id] for release in releases]
        first_reason = next((_reason(each) for each in row if each.reason), "")
        grid.add_row(
            result.id,
            result.check.level,
            result.check.title,
            *(Text(each.result, style=STYLE[each.result]) for each in row),
            "/".join(f"{each.seconds:.2f}" for each in row),
            _first_line(first_reason),
        )
    return grid


KUBELET_LINES = (
    "What a real kubelet logs for failures like these, each line explained: docs/kubelet-messages.md"
    " (or paste a line to kubelet-dra explain)"
)


def _reason(result: CheckResult) -> str:
    """The reason column: a check not run names only its cause, whose row has the reason."""
    return f"because {result.cause} failed" if result.cause else result.reason


def blocked_by(results: tuple[CheckResult, ...], cause: str) -> list[str]:
    return [result.id for result in results if result.cause == cause]


def failures(runs: ReleaseRuns) -> Group:
    """Each failed check, then each warning, in full: its reason, the sentence it enforces, the gRPC calls it
    made; then the driver's log."""
    parts: list[Any] = []
    for suite in runs.suites:
        release = f" (kubelet {suite.kubelet_version})" if len(runs.suites) > 1 else ""
        found = [r for r in suite.results if r.result == FAILED] + [r for r in suite.results if r.result == WARNING]
        for result in found:
            label = "warning, should" if result.result == WARNING else result.check.level
            parts.append(
                Text(
                    f"\n{result.id} [{label}] {result.check.title}{release} [{result.check.reference}]",
                    style=f"bold {STYLE[result.result]}",
                )
            )
            parts.append(Text(result.reason))
            if blocked := blocked_by(suite.results, result.id):
                parts.append(Text(f"  because of it, {len(blocked)} check(s) were not run: {' '.join(blocked)}"))
            parts.append(Text(f"  enforces {result.check.rule}", style="italic"))
            parts.append(Text(calls_text(result.calls) or "  (no gRPC calls to the driver)", style="dim"))
        if found and suite.driver_log:
            parts.append(Text(f"\nlast lines of the driver's log{release}:", style="bold"))
            parts.append(Text(suite.driver_log, style="dim"))
    if parts:
        parts.append(Text(f"\n{KUBELET_LINES}", style="italic"))
    return Group(*parts)


def calls_text(calls: tuple[CallRecord, ...]) -> str:
    """The calls as indented lines: method, status, duration, request and response."""
    lines = []
    for call in calls:
        method = call.method.rsplit("/", 2)
        name = "/".join(method[-2:]) if len(method) > 2 else call.method
        lines.append(f"  {name} → {call.status} ({call.duration * 1000:.0f} ms) {call.details}".rstrip())
        lines.append(f"    request:  {_cut(call.request)}")
        if call.response is not None:
            lines.append(f"    response: {_cut(call.response)}")
    return "\n".join(lines)


def _cut(message: object) -> str:
    text = json.dumps(message, sort_keys=True)
    return text if len(text) <= MESSAGE_WIDTH else text[: MESSAGE_WIDTH - 1] + "…"


def cases(runs: ReleaseRuns) -> list[junit.Case]:
    """The results of every run as test cases; a failure or warning carries its reason and calls, each case its
    level and the sentence it enforces as properties."""
    several = len(runs.suites) > 1
    return [
        _case(result, f" [kubelet {suite.kubelet_version}]" if several else "")
        for suite in runs.suites
        for result in suite.results
    ]


def write_junit(path: str | Path, runs: ReleaseRuns) -> Path:
    """The results of every run as one JUnit test suite."""
    return junit.write(path, SUITE_NAME, cases(runs))


def _case(result: CheckResult, release: str) -> junit.Case:
    """A check not run because of another's failure is a skipped case naming its cause (a property too)."""
    found = result.result in (FAILED, WARNING)
    cause = (("cause", result.cause),) if result.cause else ()
    return junit.Case(
        name=f"{result.id} {result.check.title}{release}",
        classname=f"conformance.{result.id.split('-')[0]}",
        seconds=result.seconds,
        result=SKIPPED if result.result == NOT_RUN else result.result,
        message=_first_line(result.reason, MESSAGE_WIDTH),
        details="\n".join(part for part in (result.reason, calls_text(result.calls) if found else "") if part),
        properties=(("level", result.check.level), ("rule", str(result.check.rule)), *cause),
    )
