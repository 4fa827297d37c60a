"""What the benchmark scripts share: percentiles, the machine's load, the figures the one command tabulates, the
results files the pages' tables are generated from.

Each script prints its own table and, with ``--output json``, a document whose ``figures`` list
``python -m benchmarks`` gathers into one table: a figure, its target, met or not, and the spread
of the script's runs.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs

from kubelet_dra.workbench.testbed.machineload import cpus

REPO = Path(__file__).resolve().parents[1]


@attrs.frozen
class Percentiles:
    p50: float
    p95: float
    p99: float

    @classmethod
    def of(cls, samples: Sequence[float]) -> Percentiles:
        if len(samples) < 2:
            value = samples[0] if samples else 0.0
            return cls(value, value, value)
        cuts = statistics.quantiles(samples, n=100, method="inclusive")
        return cls(statistics.median(samples), cuts[94], cuts[98])

    def ms(self) -> str:
        return f"{self.p50 * 1e3:.2f} / {self.p95 * 1e3:.2f} / {self.p99 * 1e3:.2f}"


@attrs.frozen
class Figure:
    """One line of the one command's table; ``met`` is ``None`` when the figure has no target."""

    benchmark: str
    name: str
    value: str
    target: str = ""
    met: bool | None = None
    spread: str = ""


def load() -> str:
    """The 1/5/15-minute load averages: figures on a shared machine mean little without them."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def machine(load_averages: str) -> str:
    """The machine a figure was measured on, and its load then."""
    return f"{platform.machine()}, {cpus()} cores, load {load_averages}"


def provenance(script: str) -> dict[str, str]:
    """What a results file says of how it was made: the command, when, on what machine, which Python."""
    return {
        "command": " ".join([f"python benchmarks/{script}", *sys.argv[1:]]),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "machine": machine(load()),
        "python": platform.python_version(),
    }


def status_mb(pid: int | str, field: str) -> float:
    """A memory figure of the kernel's for a process (``VmRSS``, ``VmHWM``: its peak), in MB; 0 once it is gone."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return 0.0


def peak_rss_mb(pid: int | str = "self") -> float:
    """Peak resident memory (the kernel's VmHWM) of a process, in MB."""
    return status_mb(pid, "VmHWM")


def spread(values: Sequence[float], unit: str = "ms", scale: float = 1e3) -> str:
    """The range of a figure over the runs, e.g. ``5.8 – 6.1 ms``."""
    if not values:
        return ""
    low, high = min(values) * scale, max(values) * scale
    return f"{low:.2f} – {high:.2f} {unit}" if len(values) > 1 else f"{low:.2f} {unit}"


def write_json(document: dict[str, Any], figures: Sequence[Figure]) -> None:
    json.dump({**document, "load": load(), "figures": [attrs.asdict(f) for f in figures]}, sys.stdout, indent=2)
    sys.stdout.write("\n")


def add_results_arguments(parser: argparse.ArgumentParser) -> None:
    """``--results FILE`` and ``--markdown RESULTS``: the flags of a script whose figures a page shows."""
    parser.add_argument("--results", type=Path, metavar="FILE", help="also write the figures, and how, to FILE")
    parser.add_argument(
        "--markdown", type=Path, metavar="RESULTS", help="only print the Markdown table of a results file and exit"
    )


def print_markdown_and_exit(
    arguments: argparse.Namespace, render: Callable[[dict[str, Any]], str] | None = None
) -> None:
    """``--markdown RESULTS``: print the page's table of a results file instead of measuring; ``render`` for a
    script whose page shows more than its figures."""
    if arguments.markdown:
        sys.stdout.write((render or markdown)(json.loads(arguments.markdown.read_text())))
        raise SystemExit(0)


def save_results(
    path: Path | None, script: str, document: dict[str, Any], figures: Sequence[Figure], load_at_start: str
) -> None:
    """``--results FILE``: the figures with the command that measured them, when, on what machine and load."""
    if path is not None:
        found = {**provenance(script), "machine": machine(load_at_start), **document, "load_at_end": load()}
        write_results(path, {**found, "figures": [attrs.asdict(f) for f in figures]})


def write_results(path: Path | None, results: dict[str, Any]) -> None:
    """``--results FILE`` as every script writes it (nothing without one): JSON, one key a line, readable in a diff."""
    if path is not None:
        path.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")


def markdown(results: dict[str, Any]) -> str:
    """A results file's figures as the Markdown table a page carries between its markers, led by how they were
    measured."""
    lines = [
        f"`{results['command']}` on {results['date'][:10]}: {results['machine']} at its start"
        f" ({results['load_at_end']} at its end), Python {results['python']}.",
        "",
        "| figure | value | target | met | spread / notes |",
        "|---|---:|---|---|---|",
    ]
    verdicts = {True: "**met**", False: "**not met**", None: ""}
    for figure in results["figures"]:
        lines.append(
            markdown_row([figure["name"], figure["value"], figure["target"], verdicts[figure["met"]], figure["spread"]])
        )
    return "\n".join(lines) + "\n"


def markdown_row(cells: Sequence[str]) -> str:
    """One row of a Markdown table, a ``|`` in a cell kept as text."""
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def interop_bin(interop: ModuleType) -> Path:
    """The directory the interop tier's programs are unpacked into (``unpack`` prints it last)."""
    unpack = interop.INTEROP_DIR / "unpack"
    return Path(subprocess.run([str(unpack)], capture_output=True, text=True, check=True).stdout.split()[-1])


def realk8s() -> ModuleType | None:
    """The tests' access to the real Kubernetes programs (``../shared/interop``), or ``None`` when they are absent."""
    sys.path.insert(0, str(REPO / "tests"))
    import realk8s

    return None if realk8s.interop_missing() else realk8s
