"""The scenario library as its tests read it, and the green replays each release's test file runs.

The green replays are split by release into files of their own (``test_library_green_<release>.py``): a
test file runs on one worker, and the whole library in one file was the suite's longest file by far. Each
file replays a few files at a time, since a replay mostly waits on its file's timings."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

import pytest

from kubelet_dra.kubelet.release import RELEASES
from kubelet_dra.workbench.scenarios.loader import load
from kubelet_dra.workbench.scenarios.model import Scenario
from kubelet_dra.workbench.scenarios.replayer import ReplayOptions, ScenarioResult, replay
from kubelet_dra.workbench.scenarios.replayreport import failures
from kubelet_dra.workbench.testbed.machineload import AUTO

LIBRARY = Path(__file__).resolve().parents[3] / "scenarios"
FILES = sorted(path.name for path in LIBRARY.glob("*.yaml"))


def green_file(kubelet: str) -> str:
    """The test file that replays the library under ``kubelet``."""
    return f"test_library_green_{kubelet.replace('.', '_')}.py"


AT_ONCE = 3
"""Library replays side by side in one event loop, each on its own testbed (a replay mostly waits on its file's
timings; more at once crowded a loaded 2-core machine)."""


def replay_each(prepare: Callable[[str], tuple[Scenario, ReplayOptions] | str]) -> dict[str, ScenarioResult | str]:
    """Every file of the library replayed as ``prepare`` makes it, ``AT_ONCE`` at a time in one event loop: its
    result, or the reason ``prepare`` gave for not replaying it."""

    async def run_all() -> dict[str, ScenarioResult | str]:
        gate = asyncio.Semaphore(AT_ONCE)

        async def one(name: str) -> tuple[str, ScenarioResult | str]:
            prepared = prepare(name)
            if isinstance(prepared, str):
                return name, prepared
            async with gate:
                return name, await replay(*prepared)

        return dict(await asyncio.gather(*(one(name) for name in FILES)))

    return asyncio.run(run_all())


def replayed_green(kubelet: str) -> dict[str, ScenarioResult | str]:
    """Every file replayed under ``kubelet``: under every release kubelet-dra emulates, but a file that pins its
    release only under that one; with the deadlines scaled to the machine's load, as ``replay --deadline-scale auto``
    does (the suite runs on six workers, often beside other work)."""

    def green(name: str) -> tuple[Scenario, ReplayOptions] | str:
        scenario = load(LIBRARY / name)
        if scenario.node.release_pinned and scenario.node.options.release.name != kubelet:
            return f"pinned to kubelet {scenario.node.options.release.name}"
        return scenario.on(RELEASES[kubelet]), ReplayOptions(deadline_scale=AUTO)

    return replay_each(green)


def assert_green(result: ScenarioResult | str) -> None:
    """A file's green replay passed every step (or the file was not for this release: a skip saying why)."""
    if isinstance(result, str):
        pytest.skip(result)
    assert result.passed, failures(result)
    assert result.results, "it ran its steps"
