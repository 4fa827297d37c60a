"""How a conformance run is shown: a live line per check, the final table, the calls of failed checks,
JSON and JUnit.

The live view and the final table are for people at a terminal; ``to_json`` and ``write_junit`` are
for CI. A failed check shows the gRPC calls it made, because a socket-level failure is best
understood from the exact requests and answers.
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

from kubelet_dra import junit
from kubelet_dra.conformance.framework import Check
from kubelet_dra.conformance.runner import CheckResult, SuiteResult
from kubelet_dra.junit import FAILED, PASSED, SKIPPED
from kubelet_dra.plugins import CallRecord

SUITE_NAME = "kubelet-dra conformance"
STYLE = {PASSED: "green", FAILED: "red", SKIPPED: "yellow"}
MARK = {PASSED: "✓", FAILED: "✗", SKIPPED: "-"}
REASON_WIDTH = 100
MESSAGE_WIDTH = 600
"""Recorded messages are cut to this many characters in the text report (JSON keeps them whole)."""


class LiveView:
    """A spinner naming the running check, and a line per finished check above it."""

    def __init__(self, console: Console, total: int) -> None:
        self.console = console
        self.total = total
        self.done = 0
        self.counts = {PASSED: 0, FAILED: 0, SKIPPED: 0}
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


def table(suite: SuiteResult) -> Table:
    """The final table: id, title, result, duration, reason."""
    counts = {outcome: len(suite.ids(outcome)) for outcome in (PASSED, FAILED, SKIPPED)}
    caps = suite.capabilities
    title = (
        f"{caps.driver_name or 'driver'}: {counts[PASSED]} passed, {counts[FAILED]} failed,"
        f" {counts[SKIPPED]} skipped in {suite.seconds:.1f} s"
    )
    grid = Table(title=title, title_justify="left", expand=False)
    for column in ("id", "title", "result", "s", "reason"):
        grid.add_column(column, overflow="fold", justify="right" if column == "s" else "left")
    for result in suite.results:
        grid.add_row(
            result.id,
            result.check.title,
            Text(result.result, style=STYLE[result.result]),
            f"{result.seconds:.2f}",
            _first_line(result.reason),
        )
    return grid


def failures(suite: SuiteResult) -> Group:
    """Each failed check in full: its reason, its reference, the gRPC calls it made; then the driver's log."""
    parts: list[Any] = []
    for result in suite.results:
        if result.result != FAILED:
            continue
        parts.append(Text(f"\n{result.id} {result.check.title} [{result.check.reference}]", style="bold red"))
        parts.append(Text(result.reason))
        parts.append(Text(calls_text(result.calls) or "  (no gRPC calls to the driver)", style="dim"))
    if parts and suite.driver_log:
        parts.append(Text("\nlast lines of the driver's log:", style="bold"))
        parts.append(Text(suite.driver_log, style="dim"))
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


def write_junit(path: str | Path, suite: SuiteResult) -> Path:
    """The results as one JUnit test suite; a failure carries its reason and its calls."""
    cases = [
        junit.Case(
            name=f"{result.id} {result.check.title}",
            classname=f"conformance.{result.id.split('-')[0]}",
            seconds=result.seconds,
            result=result.result,
            message=_first_line(result.reason, MESSAGE_WIDTH),
            details="\n".join(
                part for part in (result.reason, calls_text(result.calls) if result.result == FAILED else "") if part
            ),
        )
        for result in suite.results
    ]
    return junit.write(path, SUITE_NAME, cases)
