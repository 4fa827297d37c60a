"""The scenario library, golden style: every file in ``scenarios/`` replays green against the reference driver
(``test_library_green_<release>.py``), and every file can fail: broken as ``breakers.BREAKERS`` says, it reports
that expectation by name."""

from __future__ import annotations

import os
from pathlib import Path

import attrs
import pytest

from kubelet_dra.kubelet.release import RELEASES
from kubelet_dra.peers import log
from kubelet_dra.workbench.scenarios.loader import load, loads
from kubelet_dra.workbench.scenarios.model import Scenario, Step
from kubelet_dra.workbench.scenarios.replayer import ReplayOptions, ScenarioResult
from kubelet_dra.workbench.testbed.machineload import load_factor

from .breakers import BREAKERS
from .library import FILES, LIBRARY, green_file, replay_each


def test_the_library_covers_the_node_e2e_situations():
    assert len(FILES) >= 25
    assert set(BREAKERS) == set(FILES), "every scenario needs a way to break it (breakers.py)"
    names = [load(LIBRARY / name).name for name in FILES]
    assert len(set(names)) == len(names), "scenario names are unique"
    here = Path(__file__).parent
    missing = [green_file(kubelet) for kubelet in RELEASES if not (here / green_file(kubelet)).is_file()]
    assert not missing, f"every release replays the library green: write {missing}"


@pytest.fixture(scope="module")
def broken_results() -> dict[str, ScenarioResult | str]:
    """Every scenario replayed once broken (its own event loop, a few at a time)."""

    def broken(name: str) -> tuple[Scenario, ReplayOptions]:
        breaker = BREAKERS[name]
        text = (LIBRARY / name).read_text()
        if breaker.mutation is not None:
            assert breaker.mutation[0] in text, f"{name}: the mutation's text is not in the file"
            text = text.replace(*breaker.mutation)
        return _given_time_but(loads(text, name), load_factor(), breaker.broken), ReplayOptions(faults=breaker.faults)

    with open(os.devnull, "w") as sink:
        log.configure(0, sink)
        try:
            return replay_each(broken)
        finally:
            log.configure(0)


def _given_time_but(scenario: Scenario, factor: float, broken: str) -> Scenario:
    """The scenario given the machine's load in time (``Scenario.given_time``) but for the step of the expectation meant
    to break, which keeps its deadlines: they are waited out (its conditions side by side), and stretched they would
    only make the test longer."""
    timed = scenario.given_time(factor)

    def kept(step: Step) -> Step:
        if not any(condition.name == broken for condition in step.conditions):
            return step
        return attrs.evolve(step, conditions=tuple(attrs.evolve(c, stretch=0.0) for c in step.conditions))

    return attrs.evolve(timed, steps=tuple(map(kept, timed.steps)))


@pytest.mark.parametrize("name", FILES)
def test_scenario_detects_its_breakage(name: str, broken_results: dict[str, ScenarioResult | str]):
    result = broken_results[name]
    assert isinstance(result, ScenarioResult), result  # every file is replayed broken
    broken = [step.name for step in result.broken]
    assert not result.passed
    assert not result.error, result.error
    assert BREAKERS[name].broken in broken, f"{name}: expected {BREAKERS[name].broken!r} broken, got {broken}"
    first = result.broken[0]
    assert first.message, "a broken expectation says what was expected and what was seen"
