"""The replay summary a user reads in a terminal: every scenario named in full, whatever the width."""

from __future__ import annotations

from rich.console import Console

from kubelet_dra import junit
from kubelet_dra.scenarios.report import summary
from kubelet_dra.scenarios.runner import ScenarioResult, StepResult

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
