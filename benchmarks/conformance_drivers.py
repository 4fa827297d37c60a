"""The conformance suite against each real driver: how many checks pass, warn, fail and skip, and how long it takes.

One run per row of docs/conformance.md's "Measured on real drivers", on the embedded API server, each under the
kubelet releases it names; the results file is what that table is generated from::

    python benchmarks/conformance_drivers.py --results benchmarks/results/conformance_drivers.json
    python benchmarks/conformance_drivers.py --markdown benchmarks/results/conformance_drivers.json  # the table

The real drivers come from the interop tier's programs (tests/realk8s.py); NVIDIA's needs root.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import REPO, interop_bin, print_markdown_and_exit, provenance, realk8s, write_results

ALL_DEVICES_CLAIM = "benchmarks/claims/all-devices.yaml"
NVIDIA_CLAIM = "tests/interop/claims/nvidia-two-a100.yaml"
RELEASES = "1.36,1.37"
ROWS: dict[str, str] = {
    "example-gpu": "example driver, `gpu`",
    "example-cpu": "example driver, `cpu`",
    "example-net": "example driver, `net`",
    "example-partitions": "example driver, `gpu --gpu-partitions 2` (devices sharing counters)",
    "test-driver": "Kubernetes' DRA test driver",
    "nvidia": "NVIDIA's GPU driver, default claim",
    "nvidia-claim": f"NVIDIA's GPU driver, `--claim {Path(NVIDIA_CLAIM).name}` (two A100s, `GpuConfig`)",
    "all-devices": "reference driver `--fault-require-all-devices` (only claims for all its devices), no `--claim`",
    "all-devices-claim": f"the same, `--claim {Path(ALL_DEVICES_CLAIM).name}`",
}


def arguments(row: str) -> list[str]:
    """``conformance``'s arguments for one row."""
    if row.startswith("all-devices"):
        claim = ["--claim", ALL_DEVICES_CLAIM] if row.endswith("-claim") else []
        return ["--reference-driver=--fault-require-all-devices true", *claim]
    interop = realk8s()
    if interop is None:
        raise SystemExit(f"{row}: the interop tier's programs are absent (tests/realk8s.py says where they go)")
    bin_dir = interop_bin(interop)
    if row.startswith("example"):
        profile, extra = ("gpu", "--gpu-partitions 2") if row == "example-partitions" else (row.split("-")[1], "")
        return ["--driver-cmd", interop.example_driver_cmd(bin_dir, profile, extra)]
    if row == "test-driver":
        return ["--driver-cmd", interop.kubernetes_test_driver_cmd(bin_dir), "--driver-name", "test-driver.cdi.k8s.io"]
    claim = ["--claim", NVIDIA_CLAIM] if row == "nvidia-claim" else []
    return ["--driver-cmd", interop.nvidia_driver_cmd(), *claim]


def run(row: str) -> dict[str, Any]:
    """One row: the summed counts and exit code of the suite under each release, and its wall time."""
    command = [sys.executable, "-m", "kubelet_dra", "conformance", *arguments(row), "--kubelet-version", RELEASES]
    with tempfile.TemporaryDirectory() as outputs:  # the run's outputs (a suggested claim) stay out of the repository
        junit = ["--junit", str(Path(outputs) / "conformance.xml")]
        started = time.monotonic()
        done = subprocess.run([*command, *junit, "--output", "json"], capture_output=True, text=True, cwd=REPO)
        seconds = time.monotonic() - started
    if not done.stdout.strip():
        raise SystemExit(f"{row}: conformance exited {done.returncode}: {done.stderr.strip()[-2000:]}")
    report = json.loads(done.stdout)
    failed = sorted(
        {check["id"] for suite in report["runs"] for check in suite["checks"] if check["result"] == "failed"}
    )
    return {"exit_code": done.returncode, "counts": report["counts"], "failed": failed, "seconds": round(seconds, 1)}


def cell(result: dict[str, Any]) -> str:
    counts = result["counts"]
    named = {"passed": "passed", "warning": "warnings", "failed": "failed", "skipped": "skipped", "not run": "not run"}
    shown = ", ".join(f"{counts[key]} {word}" for key, word in named.items() if counts.get(key))
    failed = f" ({', '.join(result['failed'])})" if result["failed"] else ""
    return f"{shown}{failed}, exit {result['exit_code']}, {result['seconds']:.0f} s"


def markdown(results: dict[str, Any]) -> str:
    """docs/conformance.md's table: each row's counts over both kubelet releases."""
    lines = [f"| driver | kubelet {results['releases']}, embedded API server |", "|---|---|"]
    lines += [f"| {ROWS[row]} | {cell(result)} |" for row, result in results["rows"].items()]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default=",".join(ROWS), help=f"comma-separated, of {', '.join(ROWS)}")
    parser.add_argument("--results", type=Path, help="write the results file here")
    parser.add_argument("--markdown", type=Path, metavar="RESULTS", help="print docs/conformance.md's table of RESULTS")
    args = parser.parse_args()
    print_markdown_and_exit(args, markdown)
    rows = {row: run(row) for row in args.rows.split(",")}
    results = {
        **provenance("conformance_drivers.py"),
        "releases": RELEASES,
        "rows": rows,
    }
    write_results(args.results, results)
    sys.stdout.write(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
