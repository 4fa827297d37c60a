"""docs/fidelity.md has one row per library scenario: "refused: …" exactly where ``replay --real-kubelet`` refuses
the file, otherwise one cell per column that says "identical" or, exactly where ``kubelet_dra.workbench.fidelity.known``
accepts a difference, "differs: …" with why, then the program the row was compared against, on which both replays
held. The table cannot fall behind the library, the refusal rules or the known differences."""

from __future__ import annotations

import re
from pathlib import Path

from kubelet_dra.workbench.fidelity.columns import COLUMNS
from kubelet_dra.workbench.fidelity.known import KNOWN
from kubelet_dra.workbench.scenarios import onrealkubelet as realkubelet
from kubelet_dra.workbench.scenarios.loader import load

REPO = Path(__file__).resolve().parents[3]
ROW = re.compile(r"^\| ([a-z0-9-]+) \| (.+) \|$", re.MULTILINE)
HEADER = "| scenario | " + " | ".join(COLUMNS) + " | ran against"
KUBELET, MANAGER = "real kubelet 1.36.2", "dra-manager-harness"
"""What a compared row ran against: the kubelet, or its DRA manager alone for the files that call it by hand."""


def _rows() -> dict[str, list[str]]:
    text = (REPO / "docs" / "fidelity.md").read_text()
    assert HEADER in text, f"docs/fidelity.md: the scenario table's header must be {HEADER!r}"
    table = text[text.index(HEADER) :].split("\n\n", 1)[0]
    rows = ROW.findall(table)[1:]  # the header's first
    return {name: [cell.strip() for cell in cells.split(" | ")] for name, cells in rows}


def test_every_library_scenario_has_its_row_and_the_right_verdict():
    rows = _rows()
    library = sorted(path for path in (REPO / "scenarios").glob("*.yaml"))
    assert sorted(rows) == sorted(path.stem for path in library), "docs/fidelity.md: add or remove scenario rows"
    for path in library:
        scenario = load(path)
        by_hand = realkubelet.by_hand(scenario)
        refused = bool(realkubelet.refusals(scenario, "1.36", manager=by_hand))
        cells = rows[path.stem]
        assert cells[0].startswith("refused") == refused, path.name
        if not refused:
            assert len(cells) == len(COLUMNS) + 1, f"{path.stem}: one cell per column {COLUMNS}, then its oracle"
            oracle = MANAGER if by_hand else KUBELET
            assert cells[-1].startswith(oracle), f"{path.stem}: ran against {cells[-1]!r}, its oracle is {oracle}"
            assert "did not hold" not in cells[-1], f"{path.stem}: {cells[-1]}"


def test_a_cell_says_differs_exactly_where_the_difference_is_known():
    for name, cells in _rows().items():
        if cells[0].startswith("refused"):
            continue
        for column, cell in zip(COLUMNS, cells[: len(COLUMNS)], strict=True):
            if (name, column) in KNOWN:
                assert cell.startswith("differs: "), f"{name} {column}: the known difference, and why"
            else:
                assert cell == "identical", f"{name} {column}: {cell!r} is not in kubelet_dra.workbench.fidelity.known"
    assert all(name in _rows() for name, _ in KNOWN), "a known difference of a scenario the library lacks"
