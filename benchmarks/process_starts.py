"""What a process start costs: the CPU of importing what each kind of process the suite starts imports.

Each import runs in a fresh interpreter (``python -c "import X"``), several times; the table gives the median
CPU (user + system, which other work on the machine inflates far less than wall time) and writes JSON::

    python benchmarks/process_starts.py --results benchmarks/results/process_starts.json
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
from pathlib import Path

from common import load

MODULES = {
    "python alone": "",
    "the kubernetes client": "import kubernetes",
    "the reference driver (plugin)": "import kubelet_dra.peers.driver.plugin",
    "the driver command's flags": "import kubelet_dra.cli.driver",
    "the simulated kubelet's run command": "import kubelet_dra.cli.run",
}


def cpu_of(code: str) -> float:
    """CPU seconds of one fresh interpreter running ``code``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([sys.executable, "-c", code or "pass"], check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--results", type=Path, required=True, help="the JSON results file to write")
    parser.add_argument("--runs", type=int, default=5, help="fresh interpreters per import (median taken)")
    args = parser.parse_args()
    medians = {
        name: round(statistics.median(cpu_of(code) for _ in range(args.runs)), 2) for name, code in MODULES.items()
    }
    args.results.write_text(json.dumps({"runs": args.runs, "load": load(), "cpu_s": medians}, indent=1) + "\n")
    print(f"{'import':<40} {'CPU s (median)':>15}")
    for name, value in medians.items():
        print(f"{name:<40} {value:>15.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
