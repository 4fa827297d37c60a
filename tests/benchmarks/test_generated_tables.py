"""The docs' tables of measured results are the ones their results files give, as the measuring scripts print them.

Each table sits between two markers on its page; ``python benchmarks/SCRIPT --markdown RESULTS`` regenerates it.
A script with a table of its own prints it (``TABLES``); the others print their figures as one table
(``common.markdown``, ``FIGURES``).
"""

from __future__ import annotations

import importlib
import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results"
TABLES = {
    # marker: (page, the script that measures and prints the table, its results file)
    "replay-drivers": ("docs/replay.md", "replay_drivers", "replay_drivers.json"),
    "conformance-drivers": ("docs/conformance.md", "conformance_drivers", "conformance_drivers.json"),
    "crash-soak": ("benchmarks/README.md", "crash_soak", "crash_soak.json"),
    "many-nodes": ("benchmarks/README.md", "many_nodes", "many_nodes.json"),
    "manager-bench": ("benchmarks/README.md", "manager_bench", "manager_bench.json"),
}
FIGURES = [
    *("tap_bench", "apiserver_bench", "apiserver_load", "registration_bench", "suites_bench", "scale_bench"),
    "pod_path",
]
"""Scripts whose figures benchmarks/README.md shows between ``<!-- SCRIPT: begin/end -->``, from results/SCRIPT.json."""


def _script(name: str):
    sys.path.insert(0, str(REPO / "benchmarks"))
    return importlib.import_module(name)


def _between(page: str, marker: str) -> str:
    text = (REPO / page).read_text()
    assert f"<!-- {marker}: begin -->\n" in text and f"<!-- {marker}: end -->\n" in text, f"{page}: {marker}'s markers"
    return text.split(f"<!-- {marker}: begin -->\n", 1)[1].split(f"<!-- {marker}: end -->\n", 1)[0]


@pytest.mark.parametrize("marker", sorted(TABLES))
def test_the_page_s_table_is_the_results_file_s(marker: str) -> None:
    page, script, results = TABLES[marker]
    expected = _script(script).markdown(json.loads((RESULTS / results).read_text()))
    regenerate = f"regenerate: python benchmarks/{script}.py --markdown benchmarks/results/{results}"
    assert _between(page, marker) == expected, regenerate


@pytest.mark.parametrize("script", FIGURES)
def test_the_benchmarks_figures_are_the_results_file_s(script: str) -> None:
    expected = _script("common").markdown(json.loads((RESULTS / f"{script}.json").read_text()))
    regenerate = f"regenerate: python benchmarks/{script}.py --markdown benchmarks/results/{script}.json"
    assert _between("benchmarks/README.md", script) == expected, regenerate


def test_every_library_file_has_a_row_for_every_real_driver() -> None:
    results = json.loads((RESULTS / "replay_drivers.json").read_text())
    library = {path.stem for path in (REPO / "scenarios").glob("*.yaml")}
    for driver, run in results["drivers"].items():
        assert set(run["files"]) == library, f"{driver}: every library file, and only those"


def test_every_conformance_row_is_measured() -> None:
    results = json.loads((RESULTS / "conformance_drivers.json").read_text())
    assert list(results["rows"]) == list(_script("conformance_drivers").ROWS), "one measured run per row"


def test_the_readme_s_crash_soak_sentence_is_the_results_file_s() -> None:
    """README states the soak's headline; the results file of the run it quotes must say the same."""
    results = json.loads((RESULTS / "crash_soak.json").read_text())
    rows = {name: (value, held) for name, value, held in results["rows"]}
    sentence = re.search(
        r"(\d+) cycles of `kill -9` of the node and of the driver during\s+pod churn"
        r" \(`python benchmarks/crash_soak.py`\) left (\d+) lost, (\d+) double-prepared and (\d+)\s+double-unprepared"
        r" claims, (\d+) leaked CDI specs? and a\s+valid checkpoint",
        (REPO / "README.md").read_text(),
    )
    assert sentence, "README's crash soak sentence"
    cycles, lost, double_prepares, double_unprepares, cdi = sentence.groups()
    assert rows["cycles (seed)"][0].split()[0] == cycles
    assert (lost, double_prepares, double_unprepares, cdi) == (
        rows["lost claims"][0],
        rows["double prepares"][0],
        rows["double unprepares"][0],
        rows["leaked CDI specs"][0],
    )
    assert rows["checkpoint valid"] == ("yes", True) and results["held"]


def test_the_readme_s_real_drivers_pass_as_the_results_file_says() -> None:
    """README says the three real drivers pass conformance under both releases (NVIDIA's with both claims), the test
    driver with should-warnings: each of those rows of the results file exits 0 with no failure."""
    results = json.loads((RESULTS / "conformance_drivers.json").read_text())
    readme = " ".join((REPO / "README.md").read_text().split())
    assert "each pass conformance under kubelet 1.36 and 1.37" in readme
    assert results["releases"] == "1.36,1.37"
    passing = [row for row in results["rows"] if row.startswith(("example-", "test-driver", "nvidia"))]
    assert {"example-gpu", "test-driver", "nvidia", "nvidia-claim"} <= set(passing)
    for row in passing:
        result = results["rows"][row]
        assert result["exit_code"] == 0 and result["counts"]["failed"] == 0, row
    assert results["rows"]["test-driver"]["counts"]["warning"] > 0, "the README names its should-warnings"
