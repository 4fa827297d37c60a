"""The docs' tables of measured results are the ones their results files give, as the measuring scripts print them.

Each table sits between two markers on its page; ``python benchmarks/SCRIPT --markdown RESULTS`` regenerates it.
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results"
TABLES = {
    # marker: (page, the script that measures and prints the table, its results file)
    "replay-drivers": ("docs/replay.md", "replay_drivers", "replay_drivers.json"),
    "conformance-drivers": ("docs/conformance.md", "conformance_drivers", "conformance_drivers.json"),
}


def _script(name: str):
    sys.path.insert(0, str(REPO / "benchmarks"))
    return importlib.import_module(name)


@pytest.mark.parametrize("marker", sorted(TABLES))
def test_the_page_s_table_is_the_results_file_s(marker: str) -> None:
    page, script, results = TABLES[marker]
    text = (REPO / page).read_text()
    table = text.split(f"<!-- {marker}: begin -->\n", 1)[1].split(f"<!-- {marker}: end -->\n", 1)[0]
    expected = _script(script).markdown(json.loads((RESULTS / results).read_text()))
    assert table == expected, f"regenerate: python benchmarks/{script}.py --markdown benchmarks/results/{results}"


def test_every_library_file_has_a_row_for_every_real_driver() -> None:
    results = json.loads((RESULTS / "replay_drivers.json").read_text())
    library = {path.stem for path in (REPO / "scenarios").glob("*.yaml")}
    for driver, run in results["drivers"].items():
        assert set(run["files"]) == library, f"{driver}: every library file, and only those"


def test_every_conformance_row_is_measured() -> None:
    results = json.loads((RESULTS / "conformance_drivers.json").read_text())
    assert list(results["rows"]) == list(_script("conformance_drivers").ROWS), "one measured run per row"
