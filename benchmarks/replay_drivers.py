"""The scenario library replayed with each real driver: what held, what was skipped and why, and how long it took.

Each driver replays the files as a driver's CI would (``kubelet-dra replay --jobs N --driver gpu=COMMAND FILES
--output json``), the reference driver too, the same way, for the time each takes against the reference driver's
(target: at most twice). The results file is what docs/replay.md's table of files by driver is generated from::

    python benchmarks/replay_drivers.py --results benchmarks/results/replay_drivers.json
    python benchmarks/replay_drivers.py --markdown benchmarks/results/replay_drivers.json   # the docs table

The real drivers come from the interop tier's programs (tests/realk8s.py); NVIDIA's needs root.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from common import REPO, Figure, interop_bin, print_markdown_and_exit, provenance, realk8s, write_json, write_results

LIBRARY = REPO / "scenarios"
RATIO_TARGET = 2.0
DRIVERS: dict[str, str] = {
    "reference": "the reference driver (the files' own)",
    "example": "the DRA example driver (gpu.example.com)",
    "nvidia": "NVIDIA's GPU driver on mock GPUs (gpu.nvidia.com)",
    "test-driver": "Kubernetes' DRA test driver (test-driver.cdi.k8s.io)",
    "all-devices": "a driver that takes only claims for all its devices (the reference driver's policy, gpu.acme.dev)",
}
ALL_DEVICES_DRIVER = (
    "gpu={python} -m kubelet_dra driver --driver-name gpu.acme.dev --node-name {node} --kubeconfig {kubeconfig}"
    " --registry-dir {registry_dir} --plugin-dir {plugin_dir} --cdi-root {cdi_root} --devices 2"
    " --fault-require-all-devices true"
)
ALL_DEVICES_CLAIM = "benchmarks/claims/all-devices.yaml"
"""As the docs show it: the replays run in the repository."""
SMOKE_FILES = ("pod-lifecycle", "health-unknown-when-plugin-stops")
RESULT_WORDS = {"passed": "held", "skipped": "skipped", "failed": "failed"}


def driver_args(name: str) -> list[str]:
    """``replay``'s arguments that make ``name`` play the library's driver ``gpu``."""
    if name == "reference":
        return []
    if name == "all-devices":
        return ["--driver", ALL_DEVICES_DRIVER, "--claim", ALL_DEVICES_CLAIM]
    interop = realk8s()
    if interop is None:
        raise SystemExit(f"{name}: the interop tier's programs are absent (tests/realk8s.py says where they go)")
    bin_dir = interop_bin(interop)
    commands: dict[str, Callable[[], list[str]]] = {
        "example": lambda: ["--driver", f"gpu={interop.example_driver_cmd(bin_dir, 'gpu')}"],
        "nvidia": lambda: ["--driver", f"gpu={interop.nvidia_driver_cmd()}"],
        "test-driver": lambda: [
            "--driver",
            f"gpu={interop.kubernetes_test_driver_cmd(bin_dir)}",
            "--driver-name",
            "test-driver.cdi.k8s.io",
        ],
    }
    return commands[name]()


def replay(name: str, files: Sequence[Path], jobs: int) -> dict[str, Any]:
    """One driver through ``files``: each file's result, why it was skipped, its time; the whole run's time."""
    jobs_args = ["--jobs", str(jobs)]
    command = [sys.executable, "-m", "kubelet_dra", "replay", *jobs_args, *driver_args(name), *map(str, files)]
    command += ["--output", "json"]
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False, cwd=REPO)
    seconds = time.monotonic() - started
    if done.returncode not in (0, 1) or not done.stdout.strip():
        raise SystemExit(f"{name}: replay exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    scenarios = json.loads(done.stdout)["scenarios"]
    return {
        "seconds": round(seconds, 1),
        "exit_code": done.returncode,
        "files": {
            scenario["name"]: {
                "result": scenario["result"],
                "why": scenario["skipped"] or first_broken(scenario),
                "seconds": scenario["seconds"],
                "stretched": [step["name"] for step in scenario["steps"] if step["stretched"]],
            }
            for scenario in scenarios
        },
    }


def first_broken(scenario: dict[str, Any]) -> str:
    """Why a replay in ``replay --output json`` did not hold: its error, or its first failed step and why."""
    broken = [step for step in scenario["steps"] if step["result"] in ("failed", "error")]
    return scenario["error"] or (f"{broken[0]['name']}: {broken[0]['message']}" if broken else "")


def counts(run: dict[str, Any]) -> dict[str, int]:
    results = [entry["result"] for entry in run["files"].values()]
    return {word: results.count(result) for result, word in RESULT_WORDS.items()}


def held_figure(benchmark: str, what: str, tally: dict[str, int]) -> Figure:
    """A replay's files held / skipped / failed (``counts``), met when none failed."""
    return Figure(
        benchmark,
        f"{what}: held / skipped / failed",
        "{held} / {skipped} / {failed}".format(**tally),
        "0 failed",
        tally["failed"] == 0,
    )


def figures(runs: dict[str, dict[str, Any]]) -> list[Figure]:
    found = []
    reference = runs.get("reference", {}).get("seconds")
    for name, run in runs.items():
        tally = counts(run)
        found.append(held_figure("replay", f"library with {name}", tally))
        ratio = f"{run['seconds'] / reference:.2f}×" if reference and name != "reference" else ""
        met = run["seconds"] <= RATIO_TARGET * reference if ratio else None
        found.append(
            Figure(
                "replay",
                f"library with {name}: wall time",
                f"{run['seconds']:.0f} s",
                f"≤ {RATIO_TARGET:g}× reference" if ratio else "",
                met,
                ratio,
            )
        )
    return found


def markdown(results: dict[str, Any]) -> str:
    """docs/replay.md's table: each library file by driver, held (with the expectations that held only in the time a
    real driver is given, and the file's seconds) / skipped (why) / failed (why)."""
    runs = results["drivers"]
    names = [name for name in runs if name != "reference"]
    lines = ["| file | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    files = sorted({file for run in runs.values() for file in run["files"]})
    for file in files:
        cells = []
        for name in names:
            entry = runs[name]["files"].get(file)
            word = RESULT_WORDS[entry["result"]] if entry else "not run"
            why = f": {entry['why']}" if entry and entry["result"] != "passed" else ""
            if entry and entry["result"] == "passed" and entry["stretched"]:
                why = f", waits stretched: {', '.join(entry['stretched'])} (file {entry['seconds']:.0f} s)"
            cells.append((word + why).replace("|", "\\|"))
        lines.append(f"| `{file}` | " + " | ".join(cells) + " |")
    totals = ["{held} held, {skipped} skipped, {failed} failed".format(**counts(runs[name])) for name in names]
    lines.append("| **all** | " + " | ".join(totals) + " |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--drivers", default=",".join(DRIVERS), help=f"comma-separated, of {', '.join(DRIVERS)}")
    parser.add_argument("--files", help="comma-separated library file names (default: the whole library)")
    parser.add_argument("--smoke", action="store_true", help=f"only {', '.join(SMOKE_FILES)}")
    parser.add_argument("--jobs", type=int, default=3, help="files at once, for every driver alike (default 3)")
    parser.add_argument("--results", type=Path, help="write the results file here")
    parser.add_argument("--markdown", type=Path, metavar="RESULTS", help="print docs/replay.md's table of RESULTS")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    args = parser.parse_args()
    print_markdown_and_exit(args, markdown)
    names = args.files.split(",") if args.files else SMOKE_FILES if args.smoke else None
    files = [LIBRARY / f"{name}.yaml" for name in names] if names else sorted(LIBRARY.glob("*.yaml"))
    runs = {name: replay(name, files, args.jobs) for name in args.drivers.split(",")}
    results = {
        **provenance("replay_drivers.py"),
        "jobs": args.jobs,
        "drivers": runs,
    }
    write_results(args.results, results)
    found = figures(runs)
    if args.output == "json":
        write_json({"benchmark": "replay", "drivers": list(runs)}, found)
        return 0
    for figure in found:
        print(f"{figure.name:<50} {figure.value:>20} {figure.target:>20} {figure.spread}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
