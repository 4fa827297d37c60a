"""Branch coverage of ``kubelet_dra`` per top-level package, from the JSON report ``pytest --cov`` writes.

``tox -e py`` prints this table at the end of the unit run. The figure is coverage.py's own: covered
lines and branches over all lines and branches. ``--worst N --under kubelet_dra/kubelet`` lists the
files under a folder that miss the most (lines and branch outcomes together), where tests would add most::

    python benchmarks/coverage_packages.py coverage.json
    python benchmarks/coverage_packages.py coverage.json --worst 10 --under kubelet_dra/kubelet
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import attrs

PACKAGE = "kubelet_dra"


@attrs.define
class Tally:
    statements: int = 0
    covered_lines: int = 0
    branches: int = 0
    covered_branches: int = 0

    def add(self, summary: dict[str, Any]) -> None:
        self.statements += summary["num_statements"]
        self.covered_lines += summary["covered_lines"]
        self.branches += summary.get("num_branches", 0)
        self.covered_branches += summary.get("covered_branches", 0)

    @property
    def missed(self) -> int:
        return self.statements - self.covered_lines + self.branches - self.covered_branches

    @property
    def percent(self) -> float:
        total = self.statements + self.branches
        return 100.0 * (self.covered_lines + self.covered_branches) / total if total else 100.0


def relative(path: str) -> str:
    """The file's path from the package's folder up (the report names site-packages when tox installs it)."""
    parts = Path(path).parts
    return "/".join(parts[len(parts) - 1 - parts[::-1].index(PACKAGE) :]) if PACKAGE in parts else path


def package_of(path: str) -> str:
    """``kubelet_dra/<package>`` of a file, or ``kubelet_dra`` for a module at the top."""
    parts = relative(path).split("/")
    return "/".join(parts[:2]) if len(parts) > 2 else parts[0]


def tallies(report: dict[str, Any]) -> tuple[dict[str, Tally], dict[str, Tally], Tally]:
    """Per package, per file (by relative path) and in all."""
    packages: dict[str, Tally] = {}
    files: dict[str, Tally] = {}
    total = Tally()
    for path, data in report["files"].items():
        summary = data["summary"]
        packages.setdefault(package_of(path), Tally()).add(summary)
        files.setdefault(relative(path), Tally()).add(summary)
        total.add(summary)
    return packages, files, total


def table(rows: dict[str, Tally], total: Tally) -> str:
    lines = [f"{'package':<32} {'lines':>7} {'missed':>7} {'branches':>9} {'partial':>8} {'cover':>7}"]
    for name, tally in sorted(rows.items()):
        lines.append(
            f"{name:<32} {tally.statements:>7} {tally.statements - tally.covered_lines:>7} {tally.branches:>9}"
            f" {tally.branches - tally.covered_branches:>8} {tally.percent:>6.1f}%"
        )
    blank = ""
    lines.append(
        f"{'total (branch coverage)':<32} {total.statements:>7} {blank:>7} {total.branches:>9} {blank:>8}"
        f" {total.percent:>6.1f}%"
    )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("report", type=Path, help="the JSON report of `pytest --cov-report=json:FILE`")
    parser.add_argument("--worst", type=int, default=0, metavar="N", help="also list the N files that miss most")
    parser.add_argument("--results", type=Path, metavar="FILE", help="also write the table's figures as JSON")
    parser.add_argument("--under", default=PACKAGE, metavar="DIR", help="only files under this folder for --worst")
    args = parser.parse_args()
    try:
        report = json.loads(args.report.read_text())
    except (OSError, ValueError) as err:
        print(
            f"{args.report}: not a coverage JSON report ({err}); write one with --cov-report=json:FILE", file=sys.stderr
        )
        return 2
    packages, files, total = tallies(report)
    print(table(packages, total))
    chosen = {name: tally for name, tally in files.items() if name.startswith(args.under.rstrip("/") + "/")}
    worst = sorted(chosen.items(), key=lambda item: -item[1].missed)[: args.worst]
    if worst:
        print(f"\nmissing most under {args.under}:")
        for name, tally in worst:
            print(f"{tally.missed:>6} missed  {tally.percent:>5.1f}%  {name}")
    if args.results is not None:
        figures = {
            "packages": {name: round(tally.percent, 1) for name, tally in sorted(packages.items())},
            "total": round(total.percent, 1),
            "worst": {name: {"missed": tally.missed, "percent": round(tally.percent, 1)} for name, tally in worst},
        }
        args.results.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
