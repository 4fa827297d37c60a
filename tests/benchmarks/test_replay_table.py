"""docs/replay.md's table of library files by real driver is the one its results file gives, and the page's counts
are that table's."""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results" / "replay_drivers.json"
BEGIN = "<!-- replay-drivers: begin -->\n"
END = "<!-- replay-drivers: end -->\n"


def test_the_page_s_table_is_the_results_file_s() -> None:
    sys.path.insert(0, str(REPO / "benchmarks"))
    from replay_drivers import markdown

    page = (REPO / "docs" / "replay.md").read_text()
    table = page.split(BEGIN, 1)[1].split(END, 1)[0]
    expected = markdown(json.loads(RESULTS.read_text()))
    assert table == expected, "regenerate: python benchmarks/replay_drivers.py --markdown " + str(
        RESULTS.relative_to(REPO)
    )


def test_every_library_file_has_a_row_for_every_real_driver() -> None:
    results = json.loads(RESULTS.read_text())
    library = {path.stem for path in (REPO / "scenarios").glob("*.yaml")}
    for driver, run in results["drivers"].items():
        assert set(run["files"]) == library, f"{driver}: every library file, and only those"
