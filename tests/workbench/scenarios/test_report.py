"""The replay summary a user reads in a terminal: every scenario named in full, whatever the width."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from kubelet_dra.workbench import junit
from kubelet_dra.workbench.scenarios.replayer import ScenarioResult, StepResult
from kubelet_dra.workbench.scenarios.replayreport import summary

NAMES = ("kubelet-restart-during-prepare", "kubelet-restart-during-prepare-two-drivers")


def test_names_sharing_a_long_prefix_stay_apart_in_an_80_column_terminal():
    held = (StepResult(step=1, name="pods prepared", kind="expectation", result=junit.PASSED),)
    results = [ScenarioResult(name=name, path=f"scenarios/{name}.yaml", results=held, seconds=1.4) for name in NAMES]
    console = Console(width=80, record=True, color_system=None)
    console.print(summary(results))
    text = console.export_text()

    assert "…" not in text
    body = [line for line in text.splitlines() if line.startswith("│")]
    first_column = "".join(line.split("│")[1].strip() for line in body)
    assert first_column == "".join(NAMES), text


def test_every_library_scenario_name_stays_whole_in_80_columns_and_what_broke_is_shown_under_it():
    names = sorted(path.stem for path in (Path(__file__).parents[3] / "scenarios").glob("*.yaml"))
    held = (StepResult(step=1, name="pods prepared", kind="expectation", result=junit.PASSED),)
    broken = (StepResult(step=2, name="pod demo is Running", kind="expectation", result=junit.FAILED),)
    results = [
        ScenarioResult(name=name, path=f"scenarios/{name}.yaml", results=broken if i == 3 else held, seconds=12.3)
        for i, name in enumerate(names)
    ]
    console = Console(width=80, record=True, color_system=None)
    console.print(summary(results))
    lines = console.export_text().splitlines()

    assert max(len(line) for line in lines) <= 80
    cells = [line.split("│")[1].strip() for line in lines if line.startswith("│")]
    assert [cell for cell in cells if not cell.startswith("first broken")] == names  # each whole, on one line
    assert cells[4] == "first broken: pod demo is Running"  # under the scenario it belongs to
    assert "First broken" not in lines[1] + lines[2]  # no column that is empty in every other row
