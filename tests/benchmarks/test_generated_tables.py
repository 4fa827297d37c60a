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
    "compare-library": ("docs/fidelity.md", "compare_library", "compare_library.json"),
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


def test_every_library_file_is_compared_on_both_nodes() -> None:
    results = json.loads((RESULTS / "compare_library.json").read_text())
    library = {path.stem for path in (REPO / "scenarios").glob("*.yaml")}
    assert set(results["files"]) == library, "every library file, and only those"


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


def test_the_readme_s_replay_counts_are_the_results_file_s() -> None:
    """README counts the library, the files the real kubelet and its DRA manager run, and says every compared file
    came out identical: as ``compare_library.py`` measured them."""
    compare = _script("compare_library")
    results = json.loads((RESULTS / "compare_library.json").read_text())
    readme = " ".join((REPO / "README.md").read_text().split())
    found = re.search(
        r"The (\d+) files of `scenarios/`.*?\(root; (\d+) of the (\d+) files run there.*?\((\d+) more, no root"
        r".*?all (\d+) files come out identical in every column, as do the (\d+) by-hand ones",
        readme,
    )
    assert found, "README's replay paragraph"
    library, on_kubelet, of, by_hand, identical, identical_by_hand = map(int, found.groups())
    compared = {name: entry for name, entry in results["files"].items() if "columns" in entry}
    kubelet = [entry for entry in compared.values() if entry["oracle"] == "real kubelet"]
    manager = [entry for entry in compared.values() if entry["oracle"] == "real DRA manager"]
    assert library == of == len(list((REPO / "scenarios").glob("*.yaml"))) == len(results["files"])
    assert (on_kubelet, identical) == (len(kubelet), len(kubelet))
    assert (by_hand, identical_by_hand) == (len(manager), len(manager))
    assert all(compare.held(entry) for entry in compared.values()), "every compared file identical in every column"


def test_a_file_measured_again_replaces_its_row_and_the_table_names_the_later_run() -> None:
    compare = _script("compare_library")
    whole = json.loads((RESULTS / "compare_library.json").read_text())
    entry = {**whole["files"]["pod-lifecycle"], "seconds": 99.9}
    later = {"command": "python benchmarks/compare_library.py --files pod-lifecycle", "date": "2030-01-02T03:04:05"}
    some = {**later, "machine": "m", "kubelet": whole["kubelet"], "files": {"pod-lifecycle": entry}}
    updated = compare.again(whole, some)
    assert updated["files"]["pod-lifecycle"]["seconds"] == 99.9 and updated["command"] == whole["command"]
    assert updated["files"].keys() == whole["files"].keys()
    assert f"Measured again by `{later['command']}` on 2030-01-02 (m): pod-lifecycle." in compare.markdown(updated)
    with pytest.raises(SystemExit, match=re.escape("not 1.37")):
        compare.again(whole, {**some, "kubelet": "1.37"})
