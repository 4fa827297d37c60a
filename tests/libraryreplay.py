"""The scenario library replayed with a real driver through ``replay --driver``, as the interop tier runs it: every
file held or skipped with its reason, none failed, and how many held."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Sequence

JOBS = "3"
"""Files at once: with a real driver a file mostly waits for it (its republish after a wipe takes 42–55 s)."""


def replay_library(driver_args: Sequence[str], *, timeout: float = 900) -> dict[str, dict]:
    """Each library file's JSON report, by name; the run's exit code must be 0."""
    done = subprocess.run(
        [sys.executable, "-m", "kubelet_dra", "replay", "--library", "--jobs", JOBS, *driver_args, "--output", "json"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    code, out, err = done.returncode, done.stdout, done.stderr
    report = {scenario["name"]: scenario for scenario in json.loads(out)["scenarios"]} if out.strip() else {}
    failed = {
        name: scenario["error"]
        or next((f"{s['name']}: {s['message']}" for s in scenario["steps"] if s["result"] in ("failed", "error")), "")
        for name, scenario in report.items()
        if scenario["result"] == "failed"
    }
    assert code == 0 and not failed, (code, failed, err[-3000:])
    assert all(
        scenario["skipped"].startswith("needs ") for scenario in report.values() if scenario["result"] == "skipped"
    )
    return report


def held(report: dict[str, dict]) -> list[str]:
    return sorted(name for name, scenario in report.items() if scenario["result"] == "passed")
