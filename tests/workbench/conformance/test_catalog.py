"""The check counts and the check table in the docs are written from the checks: a test fails when they drift."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kubelet_dra.workbench.conformance.catalog import TABLE_END, TABLE_START, summary, updated
from kubelet_dra.workbench.conformance.checks import all_checks

ROOT = Path(__file__).resolve().parents[3]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_the_docs_say_what_the_checks_say() -> None:
    command = [sys.executable, "-m", "kubelet_dra.workbench.conformance.catalog", "--check", *map(str, DOCS)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    assert done.returncode == 0, (
        f"{done.stderr}rewrite with: python -m kubelet_dra.workbench.conformance.catalog README.md docs/*.md"
    )
    page = (ROOT / "docs" / "conformance.md").read_text()
    assert TABLE_START in page and TABLE_END in page, "both markers, or the table goes unchecked"


def test_a_table_missing_a_marker_is_an_error_naming_the_page_and_the_marker(tmp_path: Path) -> None:
    rows = "| id | level |\n|---|---|\n| `REG-001` | must |\n"
    for marker, text in ((TABLE_END, f"{TABLE_START}\n{rows}\nend\n"), (TABLE_START, f"{rows}{TABLE_END}\n")):
        page = tmp_path / "page.md"
        page.write_text(text)
        command = [sys.executable, "-m", "kubelet_dra.workbench.conformance.catalog", "--check", str(page)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        assert done.returncode == 2, done
        assert done.stderr.startswith(f"{page}: the check table lacks its marker {marker}"), done.stderr
        assert "Traceback" not in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr


def test_a_wrong_count_or_a_stale_row_is_rewritten_and_flagged(tmp_path: Path) -> None:
    checks = all_checks()
    stale = tmp_path / "page.md"
    stale.write_text(f"with 3 named checks\n\n{TABLE_START}\n| `REG-001` | must | old title |\n{TABLE_END}\n\nend\n")
    command = [sys.executable, "-m", "kubelet_dra.workbench.conformance.catalog", "--check", str(stale)]
    assert subprocess.run(command, capture_output=True, check=False).returncode == 1
    text = updated(stale.read_text(), checks)
    assert f"with {len(checks)} named checks" in text and "old title" not in text
    assert text.count("\n| `") == len(checks) and text.endswith(f"{TABLE_END}\n\nend\n")


def test_the_summary_counts_groups_and_levels() -> None:
    checks = all_checks()
    musts = sum(check.level == "must" for check in checks)
    assert summary(checks) == f"{len(checks)} checks in nine groups: {musts} `must`, {len(checks) - musts} `should`"
