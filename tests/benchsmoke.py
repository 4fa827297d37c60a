"""Running a benchmark at smoke size from a test: its JSON report's figures, or the test fails with its words."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def figures(*command: str, timeout: float = 240) -> list[dict[str, Any]]:
    """The figures of ``python COMMAND --output json`` run from the repo (``-m benchmarks --smoke …`` or a script)."""
    done = subprocess.run(
        [sys.executable, *command, "--output", "json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0 and done.stdout, done.stderr[-3000:] or done.stdout[-3000:]
    document = json.loads(done.stdout)
    if "reports" in document:  # python -m benchmarks: one report per benchmark chosen
        (report,) = document["reports"]
        assert "error" not in report, report["error"]
        document = report
    found = document["figures"]
    assert found and all(figure["value"] for figure in found), found
    return found


def missing(found: list[dict[str, Any]], expected: list[str]) -> list[str]:
    """The expected figure names (prefixes) that no figure has."""
    names = [figure["name"] for figure in found]
    return [name for name in expected if not any(have.startswith(name) for have in names)]
