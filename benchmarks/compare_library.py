"""The scenario library on kubelet-dra and on the real kubelet, column by column, file by file.

Each library file runs in its own ``kubelet-dra replay --compare --real-kubelet KUBELET --cri-cmd ... --real-manager
HARNESS --deadline-scale auto --output json FILE`` under the machine-wide real-kubelet lock, so a file the real
kubelet cannot run is refused alone, with replay's reasons, and the load is read as each file starts; the files that
prepare by hand run
against the real DRA manager (``dra-manager-harness``). The results file is what docs/fidelity.md's table of the
scenarios on both nodes is generated from::

    python benchmarks/compare_library.py --results benchmarks/results/compare_library.json
    python benchmarks/compare_library.py --markdown benchmarks/results/compare_library.json   # the docs table
    python benchmarks/compare_library.py --files NAME... --results benchmarks/results/compare_library.json

With ``--files`` and an existing results file, those files are measured again and their rows replaced; the file
keeps the whole run's command and date and lists each later measurement (its command, date and files), which the
table's lead paragraph names.

The real kubelet and its runtime come from the interop tier's programs (tests/realk8s.py); the real kubelet needs root.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import attrs
from common import REPO, interop_bin, load, print_markdown_and_exit, provenance, realk8s, write_results
from replay_drivers import first_broken

from kubelet_dra.workbench.fidelity.columns import COLUMNS
from kubelet_dra.workbench.fidelity.comparison import IDENTICAL, KNOWN, REAL, REAL_MANAGER

LIBRARY = REPO / "scenarios"
PROGRAMS = {REAL: "real kubelet", REAL_MANAGER: "dra-manager-harness"}
"""The report's name of a file's other side → the program its row names."""
SCALE = ("--deadline-scale", "auto")
"""Each file's deadlines stretched by the machine's load when it starts (none on a quiet machine), as a user on a
shared machine runs it: the columns compare what each node did, not how fast a shared machine let it."""
REFUSED = re.compile(r"cannot run on the real kubelet [\d.]+: (?P<reasons>.*) \(fix: ")
"""replay's usage error for a file the real kubelet (or its DRA manager) cannot run."""


@attrs.frozen
class RealPrograms:
    """What plays the other side: the tests' access to the real programs (and the lock), ``replay``'s flags that
    name them, and the real kubelet's version."""

    interop: ModuleType
    flags: tuple[str, ...]
    version: str

    @classmethod
    def find(cls) -> RealPrograms:
        interop = realk8s()
        if interop is None or (reason := interop.real_kubelet_missing()) is not None:
            raise SystemExit(f"compare: needs the real kubelet ({reason if interop else 'no interop programs'})")
        bin_dir = interop_bin(interop)
        kubelet = str(bin_dir / "kubelet")
        version = subprocess.run([kubelet, "--version"], capture_output=True, text=True, check=True).stdout
        runtime = f"{bin_dir}/fake-cri -listen unix://{{cri_socket}}"
        harness = str(bin_dir / "dra-manager-harness")
        flags = ("--real-kubelet", kubelet, "--cri-cmd", runtime, "--real-manager", harness)
        return cls(interop, flags, version.split()[-1].removeprefix("v"))


def compare(path: Path, real: RealPrograms) -> dict[str, Any]:
    """One file on both nodes: each column's verdict and each side's result, or replay's reasons for refusing it."""
    command = [sys.executable, "-m", "kubelet_dra", "replay", "--compare", *real.flags, *SCALE, "--output", "json"]
    with real.interop.real_kubelet_turn():
        at_start = load()
        started = time.monotonic()
        done = subprocess.run([*command, str(path.relative_to(REPO))], capture_output=True, text=True, cwd=REPO)
        seconds = time.monotonic() - started
    found: dict[str, Any] = {"exit_code": done.returncode, "seconds": round(seconds, 1), "load": at_start}
    refused = REFUSED.search(done.stderr)
    if done.returncode == 2 and refused:
        return {**found, "refused": refused["reasons"].split("; ")}
    if done.returncode not in (0, 1) or not done.stdout.strip():
        return {**found, "error": done.stderr.strip()[-2000:]}
    [scenario] = json.loads(done.stdout)["scenarios"]
    columns = {
        column["column"]: {key: column[key] for key in ("verdict", "known", "diff")} for column in scenario["columns"]
    }
    sides = {
        side: {
            "held": scenario[side]["passed"],
            "seconds": scenario[side]["seconds"],
            "why": first_broken(scenario[side]),
        }
        for side in ("simulated", "real")
    }
    return {**found, "oracle": scenario["oracle"], "columns": columns, **sides}


def held(entry: dict[str, Any]) -> bool:
    """Both replays held and every column came out identical."""
    identical = all(column["verdict"] == IDENTICAL for column in entry["columns"].values())
    return identical and entry["simulated"]["held"] and entry["real"]["held"]


def tally(files: dict[str, dict[str, Any]]) -> dict[str, int]:
    """How many files were identical on both nodes, differed (or did not hold), were refused, or could not run."""
    kinds = [
        "refused"
        if "refused" in entry
        else "error"
        if "error" in entry
        else "identical"
        if held(entry)
        else "differing"
        for entry in files.values()
    ]
    return {kind: kinds.count(kind) for kind in ("identical", "differing", "refused", "error")}


def _reason(name: str, reason: str) -> str:
    """One of replay's reasons without the file's own path: ``scenarios/F.yaml:29: …`` → ``line 29: …``."""
    rest = reason.removeprefix(f"scenarios/{name}.yaml").removeprefix(":")
    line, sep, after = rest.partition(": ")
    return f"line {line}: {after}" if sep and line.isdigit() else rest.strip()


def _column(result: dict[str, Any]) -> str:
    if result["verdict"] == IDENTICAL:
        return IDENTICAL
    if result["verdict"] == KNOWN:
        return f"differs: {result['known']}"
    return "differs (not a known difference: its diff is in the results file)"


def row(name: str, entry: dict[str, Any], version: str) -> str:
    """One file's row: refused (replay's reasons), or each column's verdict and what it ran against."""
    if "columns" not in entry:
        reasons = "; ".join(_reason(name, reason) for reason in entry.get("refused", ()))
        cells = [f"refused: {reasons}" if reasons else f"not run: {entry['error']}", *["—"] * len(COLUMNS)]
    else:
        times = f"{entry['simulated']['seconds']:.1f} / {entry['real']['seconds']:.1f} s; {_one_minute(entry):.1f}"
        sides = {"kubelet-dra": entry["simulated"], f"the {entry['oracle']}": entry["real"]}
        unheld = [f"did not hold on {side}: {replay['why']}" for side, replay in sides.items() if not replay["held"]]
        ran = f"{PROGRAMS[entry['oracle']]} {version} ({'; '.join([times, *unheld])})"
        cells = [_column(entry["columns"][column]) for column in COLUMNS] + [ran]
    return f"| {name} | " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in cells) + " |"


def _one_minute(entry: dict[str, Any]) -> float:
    return float(entry["load"].split()[0])


def markdown(results: dict[str, Any]) -> str:
    """docs/fidelity.md's table of the library on both nodes, after a paragraph that names the run and sums it up."""
    files = results["files"]
    counts = tally(files)
    compared = [entry for entry in files.values() if "columns" in entry]
    loads = [_one_minute(entry) for entry in files.values()]
    errors = f", {counts['error']} could not be run" if counts["error"] else ""
    on_kubelet = sum(entry["oracle"] == REAL for entry in compared)
    lines = [
        f"`{results['command']}` on {results['date'][:10]}: {results['machine']} at its start, Python"
        f" {results['python']}, the real kubelet {results['kubelet']}. {len(files)} files: {len(compared)} compared"
        f" ({on_kubelet} on the real kubelet, {len(compared) - on_kubelet} on its DRA manager alone), of which"
        f" {counts['identical']} held on both sides and came out identical in every column and {counts['differing']}"
        f" did not; {counts['refused']} refused{errors}. {results['seconds'] / 60:.0f} min in all; 1-minute load"
        f" average {min(loads):.1f}–{max(loads):.1f} when a file started.",
        *(
            f"Measured again by `{later['command']}` on {later['date'][:10]} ({later['machine']}):"
            f" {', '.join(later['files'])}."
            for later in results.get("again", [])
        ),
        "",
        "| scenario | " + " | ".join(COLUMNS) + " | ran against (seconds: kubelet-dra / real kubelet; load) |",
        "|---|" + "---|" * (len(COLUMNS) + 1),
    ]
    lines += [row(name, entry, results["kubelet"]) for name, entry in sorted(files.items())]
    return "\n".join(lines) + "\n"


def again(whole: dict[str, Any], some: dict[str, Any]) -> dict[str, Any]:
    """The whole library's results with the files of ``some`` measured again: their rows replaced, the later
    measurement listed (its command, date and files) beside the whole run's."""
    if whole["kubelet"] != some["kubelet"]:
        raise SystemExit(f"compare: the results file is of the real kubelet {whole['kubelet']}, not {some['kubelet']}")
    later = {key: some[key] for key in ("command", "date", "machine")} | {"files": sorted(some["files"])}
    return {**whole, "files": {**whole["files"], **some["files"]}, "again": [*whole.get("again", []), later]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", nargs="+", metavar="NAME", help="library file names (default: the whole library)")
    parser.add_argument("--results", type=Path, help="write the results file here")
    parser.add_argument("--markdown", type=Path, metavar="RESULTS", help="print docs/fidelity.md's table of RESULTS")
    args = parser.parse_args()
    print_markdown_and_exit(args, markdown)
    paths = [LIBRARY / f"{name}.yaml" for name in args.files] if args.files else sorted(LIBRARY.glob("*.yaml"))
    real = RealPrograms.find()
    made = provenance("compare_library.py")
    started = time.monotonic()
    files = {}
    for path in paths:
        files[path.stem] = entry = compare(path, real)
        print(
            f"{path.stem}: exit {entry['exit_code']}, {entry['seconds']:.0f} s, load {entry['load']}", file=sys.stderr
        )
    results = {**made, "kubelet": real.version, "seconds": round(time.monotonic() - started), "files": files}
    if args.results and args.files and args.results.exists():
        results = again(json.loads(args.results.read_text()), results)
    write_results(args.results, results)
    sys.stdout.write(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
