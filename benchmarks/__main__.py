"""``python -m benchmarks``: the kubelet-side benchmarks in one command, one table, optionally JSON.

Each benchmark runs as its own process (so one's memory never counts in another's peak RSS) with
``--output json``; the figures they report are gathered into one table: the figure, its target,
met or not, and the spread of the runs. Reduced sizes by default (the pod path beside the real kubelet joins
where the real kubelet can run);
``--full`` runs the sizes the targets are set for, ``--smoke`` the least that still produces every
figure (what CI runs, so a change that breaks a benchmark fails the build).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

HERE = Path(__file__).resolve().parent
REDUCED_REPLAY = "pod-lifecycle,prepare-fails-then-succeeds,slices-kept-when-plugin-restarts-in-time,apiserver-restart"
SUITE: dict[str, tuple[str, dict[str, list[str]]]] = {
    # name: (script, arguments per size); smoke: the least that still produces every figure, for CI
    "manager": (
        "manager_bench.py",
        {
            "smoke": ["--cycles", "2", "--runs", "1", "--drivers", "noop", "--apiservers", "embedded"],
            "reduced": ["--cycles", "20", "--runs", "3"],
            "full": ["--cycles", "50", "--runs", "3"],
        },
    ),
    "scale": (
        "scale_bench.py",
        {"smoke": ["--pods", "50", "--curve", "100,1000"], "reduced": ["--pods", "2000"], "full": ["--pods", "10000"]},
    ),
    "nodes": (
        "many_nodes.py",
        {
            "smoke": ["--nodes", "2", "--apiservers", "embedded", "--steady", "1"],
            "reduced": ["--nodes", "10", "--steady", "5"],
            "full": ["--nodes", "10,100,1000"],
        },
    ),
    "tap": ("tap_bench.py", {"smoke": ["--calls", "10"], "reduced": ["--calls", "300"], "full": ["--calls", "2000"]}),
    "apiserver": (
        "apiserver_bench.py",
        {
            "smoke": ["--slices", "20", "--watchers", "2", "--events", "5", "--concurrency", "2"],
            "reduced": ["--slices", "2000", "--watchers", "4", "--events", "200"],
            "full": [],
        },
    ),
    "apiserver-load": (
        "apiserver_load.py",
        {
            # long enough that each half has requests beside the clients' one-second watches
            "smoke": ["--clients", "4", "--seconds", "4", "--slow", "1"],
            "reduced": ["--clients", "50", "--seconds", "16"],
            "full": [],
        },
    ),
    "registration": (
        "registration_bench.py",
        {
            "smoke": ["--iterations", "2", "--modes", "event-driven,kubelet-timing"],
            "reduced": ["--modes", "event-driven"],
            "full": ["--modes", "event-driven,kubelet-timing"],
        },
    ),
    "path": ("pod_path.py", {"smoke": ["--pods", "1"], "reduced": ["--pods", "5"], "full": ["--pods", "20"]}),
    "replay": (
        "replay_drivers.py",
        {
            "smoke": ["--drivers", "reference,example", "--smoke"],
            "reduced": ["--drivers", "reference,example", "--files", REDUCED_REPLAY],
            "full": ["--drivers", "reference,example,nvidia,test-driver"],
        },
    ),
}
NEEDS_REAL_KUBELET = {"path"}
"""Run by default only where the real kubelet can run (the interop programs, root)."""
NEEDS_INTEROP = {"replay"}
"""Run by default only where the interop tier's real drivers are."""


def default_suite() -> str:
    sys.path.insert(0, str(HERE))
    from common import realk8s

    interop = realk8s()
    usable = interop is not None and interop.real_kubelet_missing() is None
    needs = {name for name in NEEDS_REAL_KUBELET if not usable} | (NEEDS_INTEROP if interop is None else set())
    return ",".join(name for name in SUITE if name not in needs)


def run(name: str, size: str) -> dict[str, Any]:
    script, arguments = SUITE[name]
    command = [sys.executable, str(HERE / script), *arguments[size], "--output", "json"]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        return {"benchmark": name, "seconds": seconds, "error": done.stderr.strip().splitlines()[-1:] or ["failed"]}
    return {"benchmark": name, "seconds": seconds, **json.loads(done.stdout)}


def table(reports: list[dict[str, Any]]) -> Table:
    result = Table(title="kubelet-dra benchmarks")
    for column in ("benchmark", "figure", "value", "target", "met", "spread / notes"):
        result.add_column(column, justify="right" if column == "value" else "left")
    for report in reports:
        if "error" in report:
            result.add_row(report["benchmark"], "[red]failed[/red]", "", "", "", " ".join(report["error"]))
            continue
        for figure in report["figures"]:
            met = {True: "[green]met[/green]", False: "[red]not met[/red]", None: ""}[figure["met"]]
            result.add_row(
                figure["benchmark"], figure["name"], figure["value"], figure["target"], met, figure["spread"]
            )
    result.caption = " · ".join(
        f"{r['benchmark']}: {r['seconds']:.0f} s, load {r.get('loadAtStart', '?')} → {r.get('load', '?')}"
        for r in reports
    )
    return result


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    sizes = parser.add_mutually_exclusive_group()
    sizes.add_argument("--full", action="store_true", help="the sizes the targets are set for (takes longer)")
    sizes.add_argument("--smoke", action="store_true", help="the least that produces every figure (what CI runs)")
    parser.add_argument("--only", default=default_suite(), help="benchmarks to run, comma-separated (%(default)s)")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    arguments = parser.parse_args()
    chosen = arguments.only.split(",")
    if unknown := set(chosen) - set(SUITE):
        parser.error(f"unknown benchmark(s) {', '.join(sorted(unknown))}; choose from {', '.join(SUITE)}")
    size = "full" if arguments.full else "smoke" if arguments.smoke else "reduced"
    reports = [run(name, size) for name in chosen]
    if arguments.output == "json":
        json.dump({"size": size, "reports": reports}, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        Console(width=160).print(table(reports))
    return 1 if any("error" in report for report in reports) else 0


if __name__ == "__main__":
    sys.exit(main())
