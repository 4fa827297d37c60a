"""Where a test suite's time goes: the CPU of the pytest run, its slowest tests and files, every process it starts.

The figures are CPU seconds (user + system) beside the wall time: other load on the machine inflates CPU seconds
far less than wall time. Every Python
process the run starts imports a ``sitecustomize`` written here (inherited through ``PYTHONPATH``) that
appends one line when it starts and one when it exits normally, with its own CPU (a child of a fork
server starts no interpreter: it is counted from its exit line, as ``... (forked)``); a process ended by a
signal (a driver stopped with SIGTERM) is counted but its CPU lands only in its parent's ``children``
times, which the pytest workers' lines report. Pytest arguments go after ``--``::

    python benchmarks/suite_time.py --results suite.json -- -n 4 --dist loadfile -m "not interop"
    python benchmarks/suite_time.py --results subset.json -- tests/peers/driver -x
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import load

REPO = Path(__file__).resolve().parents[1]

HOOK = """
import atexit, json, os, sys, time
_LOG = os.environ.get("KDRA_SUITE_TIME_LOG")
if _LOG:
    def _line(event):
        t = os.times()
        entry = {"event": event, "pid": os.getpid(), "ppid": os.getppid(), "argv": sys.argv[:4],
                 "worker": os.environ.get("PYTEST_XDIST_WORKER", ""), "cpu": t.user + t.system,
                 "children": t.children_user + t.children_system, "at": time.time()}
        try:
            with open(_LOG, "a") as out:
                out.write(json.dumps(entry) + "\\n")
        except OSError:
            pass
    _line("start")
    atexit.register(_line, "exit")
"""

DURATION = re.compile(r"^(?P<seconds>[0-9.]+)s (?P<phase>call|setup|teardown)\s+(?P<test>\S+)")
SLOWEST = 40
"""How many of the slowest tests the results keep; every file's total is kept too (``files``)."""
SUMMARY = re.compile(r"^=*\s*(?P<summary>\d+ (passed|failed)[^=]*?)\s*=*$")


def kind(argv: list[str]) -> str:
    """What a process is, from its first arguments: a pytest worker, a kubelet-dra command, a module, a script."""
    text = " ".join(argv)
    if "xdist" in text or "pytest" in text or argv == ["-c"]:  # an xdist worker: execnet starts it with -c
        return "pytest (main or worker)"
    if not argv:
        return "?"
    path = Path(argv[0])
    name = ".".join(path.parts[path.parts.index("kubelet_dra") :])[:-3] if "kubelet_dra" in path.parts else path.name
    if name.endswith(".forkserver"):  # its arguments are a descriptor and the modules it imports
        return name
    command = argv[1] if len(argv) > 1 and not argv[1].startswith("-") else "(options first)"
    return f"{name} {command}".strip() if name.startswith(("kubelet", "kubelet_dra")) else name or "python -c"


def run(pytest_args: list[str], log: Path) -> tuple[float, float, str]:
    """Run pytest under the hook; its wall time, the CPU of it and everything it waited for, and its output."""
    hook_dir = log.parent
    (hook_dir / "sitecustomize.py").write_text(HOOK)
    env = {
        **os.environ,
        "KDRA_SUITE_TIME_LOG": str(log),
        "PYTHONPATH": os.pathsep.join(filter(None, [str(hook_dir), os.environ.get("PYTHONPATH", "")])),
    }
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--durations=0", "-q", *pytest_args]
    done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout + done.stderr


def summarise(log: Path, output: str, wall: float, cpu: float, pytest_args: list[str]) -> dict[str, Any]:
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()] if log.exists() else []
    starts = [entry for entry in lines if entry["event"] == "start"]
    exits = {entry["pid"]: entry for entry in lines if entry["event"] == "exit"}
    kinds: dict[str, dict[str, Any]] = collections.defaultdict(lambda: {"started": 0, "exited": 0, "cpu": 0.0})
    workers_self = workers_children = 0.0
    for entry in starts:
        end = exits.get(entry["pid"])
        row = kinds[kind((end or entry)["argv"])]  # at exit, a ``-m`` module's argv names its file
        row["started"] += 1
        if end is not None:
            row["exited"] += 1
            row["cpu"] += end["cpu"]
            if end["worker"] and kind(end["argv"]).startswith("pytest"):
                workers_self += end["cpu"]
                workers_children += end["children"]
    started = {entry["pid"] for entry in starts}
    forked = [end for end in exits.values() if end["pid"] not in started]
    for end in forked:  # a fork server's child: no interpreter start, the server's exit hook at its end
        row = kinds[f"{kind(end['argv'])} (forked)"]
        row["started"] += 1
        row["exited"] += 1
        row["cpu"] += end["cpu"]
    durations = [m.groupdict() for m in map(DURATION.match, output.splitlines()) if m]
    files: dict[str, float] = collections.defaultdict(float)
    for duration in durations:
        files[duration["test"].split("::")[0]] += float(duration["seconds"])
    summary = next((m["summary"] for m in map(SUMMARY.search, reversed(output.splitlines())) if m), "")
    problems = [line for line in output.splitlines() if re.match(r"(FAILED|ERROR) \S", line)]
    return {
        "pytest_args": pytest_args,
        "load": load(),
        "summary": summary,
        "problems": problems,
        "wall_s": round(wall, 1),
        "cpu_s": round(cpu, 1),
        "processes_started": len(starts) + len(forked),
        "processes_forked": len(forked),
        "workers_own_cpu_s": round(workers_self, 1),
        "workers_children_cpu_s": round(workers_children, 1),
        "kinds": {
            name: {**row, "cpu": round(row["cpu"], 1)}
            for name, row in sorted(kinds.items(), key=lambda item: -item[1]["started"])
        },
        "slowest": [{**d, "seconds": float(d["seconds"])} for d in durations[:SLOWEST]],
        "files": {name: round(seconds, 2) for name, seconds in sorted(files.items(), key=lambda item: -item[1])},
    }


def table(results: dict[str, Any]) -> str:
    rows = [
        f"pytest {' '.join(results['pytest_args'])}: {results['summary']}",
        f"wall {results['wall_s']} s, CPU {results['cpu_s']} s (load {results['load']})",
        *results["problems"],
        f"processes started: {results['processes_started']}; pytest workers' own CPU {results['workers_own_cpu_s']} s,"
        f" their subprocesses' {results['workers_children_cpu_s']} s",
        "",
        f"{'process':<52} {'started':>8} {'exited':>7} {'CPU s':>8} {'CPU/exit':>9}",
    ]
    for name, row in results["kinds"].items():
        each = row["cpu"] / row["exited"] if row["exited"] else 0.0
        rows.append(f"{name[:52]:<52} {row['started']:>8} {row['exited']:>7} {row['cpu']:>8.1f} {each:>9.2f}")
    rows += ["", "slowest (wall):"] + [
        f"{d['seconds']:>7.2f} s {d['phase']:<8} {d['test']}" for d in results["slowest"]
    ]
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=Path, required=True, help="the JSON results file to write")
    parser.add_argument("pytest_args", nargs="*", help="after --: what pytest runs")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="suite-time-log-") as scratch:
        log = Path(scratch) / "processes.jsonl"
        wall, cpu, output = run(args.pytest_args, log)
        results = summarise(log, output, wall, cpu, args.pytest_args)
    args.results.write_text(json.dumps(results, indent=1) + "\n")
    print(output[-4000:] if not results["summary"] else "")
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
