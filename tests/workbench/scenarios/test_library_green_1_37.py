"""Every file of the scenario library replays green against the reference driver under kubelet 1.37."""

from __future__ import annotations

import pytest

from kubelet_dra.workbench.scenarios.replayer import ScenarioResult

from .library import FILES, assert_green, replayed_green


@pytest.fixture(scope="module")
def replayed() -> dict[str, ScenarioResult | str]:
    return replayed_green("1.37")


@pytest.mark.parametrize("name", FILES)
def test_scenario_replays_green(name: str, replayed: dict[str, ScenarioResult | str]) -> None:
    assert_green(replayed[name])
