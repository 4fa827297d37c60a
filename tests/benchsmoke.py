"""Running a benchmark at smoke size from a test: what it printed (its JSON report's figures, its tables' rows),
or the test fails with its words."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def run(*command: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``python COMMAND`` run from the repo as a user types it, in a terminal wide enough that no table row is
    folded; it must exit 0 and print something."""
    done = subprocess.run(
        [sys.executable, *command],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert done.returncode == 0 and done.stdout, done.stderr[-3000:] or done.stdout[-3000:]
    return done


def figures(*command: str, timeout: float = 240) -> list[dict[str, Any]]:
    """The figures of ``python COMMAND --output json`` run from the repo (``-m benchmarks --smoke …`` or a script)."""
    document = json.loads(run(*command, "--output", "json", timeout=timeout).stdout)
    if "reports" in document:  # python -m benchmarks: one report per benchmark chosen
        (report,) = document["reports"]
        assert "error" not in report, report["error"]
        document = report
    found = document["figures"]
    assert found and all(figure["value"] for figure in found), found
    return found


def rows(text: str) -> dict[str, list[str]]:
    """The body rows of the tables ``rich`` printed in ``text``: each row's first cell → its other cells."""
    found = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.split("│")]
        if len(cells) > 3:  # "│ a │ b │" → ["", "a", "b", ""]; the header's rule is another character
            found[cells[1]] = cells[2:-1]
    return found


def missing(found: list[dict[str, Any]], expected: list[str]) -> list[str]:
    """The expected figure names (prefixes) that no figure has."""
    names = [figure["name"] for figure in found]
    return [name for name in expected if not any(have.startswith(name) for have in names)]
