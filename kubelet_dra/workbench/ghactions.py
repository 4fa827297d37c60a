"""The suites' results where a GitHub Actions job shows them: annotations and the step summary.

Under GitHub Actions (``GITHUB_ACTIONS=true``) ``conformance`` and ``replay`` print a workflow command per
failed case (``::error``) and per warning (``::warning``), which the run's page lists (beside the file's line
when the case has one), and append a Markdown summary to the file ``$GITHUB_STEP_SUMMARY`` names. Both read
the same test cases as the JUnit report, so the three never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TextIO

from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.workbench import junit

LEVELS = {junit.FAILED: "error", junit.ERROR: "error", junit.WARNING: "warning"}
"""The annotation of each result worth one; passed and skipped cases get none."""
MARKS = {junit.FAILED: "✗ failed", junit.ERROR: "✗ error", junit.WARNING: "! warning"}


def enabled(environ: Mapping[str, str]) -> bool:
    """Whether this process runs as a step of a GitHub Actions job (the runner sets ``GITHUB_ACTIONS=true``)."""
    return environ.get("GITHUB_ACTIONS") == "true"


def commands(cases: Sequence[junit.Case]) -> list[str]:
    """One ``::error`` or ``::warning`` workflow command per failed case or warning, titled with the case's name."""
    lines = []
    for case in cases:
        level = LEVELS.get(case.result)
        if level is None:
            continue
        where = [f"file={_property(case.file)}"] if case.file else []
        where += [f"line={case.line}"] if case.file and case.line else []
        fields = ",".join([*where, f"title={_property(case.name)}"])
        lines.append(f"::{level} {fields}::{_data(case.message or case.result)}")
    return lines


def summary(suite: str, headline: str, cases: Sequence[junit.Case]) -> str:
    """The step summary: the suite, its one-line result, and a table of every failure and warning."""
    findings = [case for case in cases if case.result in LEVELS]
    parts = [f"### {suite}", "", _cell(headline), ""]
    if findings:
        parts += ["| result | case | message |", "|---|---|---|"]
        parts += [f"| {MARKS[case.result]} | {_cell(case.name)} | {_cell(case.message)} |" for case in findings]
    else:
        parts.append(f"No failure and no warning in {len(cases)} case(s).")
    return "\n".join(parts) + "\n\n"


def report(suite: str, headline: str, cases: Sequence[junit.Case], stream: TextIO, environ: Mapping[str, str]) -> None:
    """Under GitHub Actions: the annotations on ``stream``, the summary appended to ``$GITHUB_STEP_SUMMARY``
    (when set); elsewhere nothing."""
    if not enabled(environ):
        return
    for line in commands(cases):
        stream.write(line + "\n")
    stream.flush()
    if target := environ.get("GITHUB_STEP_SUMMARY"):
        try:
            with Path(target).open("a", encoding="utf-8") as file:
                file.write(summary(suite, headline, cases))
        except OSError as err:
            raise ConfigError(
                f"cannot append the step summary: {err.strerror or err}",
                where=f"GITHUB_STEP_SUMMARY={target}",
                fix="name a writable file, or unset GITHUB_STEP_SUMMARY",
            ) from err


def _data(text: str) -> str:
    """A command's message: GitHub reads ``%``, CR and LF escaped."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _property(text: str) -> str:
    """A command's property value: as a message, and ``:`` and ``,`` escaped too."""
    return _data(text).replace(":", "%3A").replace(",", "%2C")


def _cell(text: str) -> str:
    """Text in one Markdown table cell (or paragraph): one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")
