"""The scenario library as its tests read it, and the green replay each release's test file runs.

The green replays are split by release into files of their own (``test_library_green_<release>.py``): a
test file runs on one worker, and the whole library in one file was the suite's longest file by far."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubelet_dra.kubelet.release import RELEASES
from kubelet_dra.workbench.scenarios.loader import load
from kubelet_dra.workbench.scenarios.replayer import ReplayOptions, replay
from kubelet_dra.workbench.scenarios.replayreport import failures
from kubelet_dra.workbench.testbed.machineload import AUTO

LIBRARY = Path(__file__).resolve().parents[3] / "scenarios"
FILES = sorted(path.name for path in LIBRARY.glob("*.yaml"))


def green_file(kubelet: str) -> str:
    """The test file that replays the library under ``kubelet``."""
    return f"test_library_green_{kubelet.replace('.', '_')}.py"


async def replays_green(name: str, kubelet: str) -> None:
    """Under every release kubelet-dra emulates, but a file that pins its release only under that one; with the
    deadlines scaled to the machine's load, as ``replay --deadline-scale auto`` does (the suite runs on six workers,
    often beside other work)."""
    scenario = load(LIBRARY / name)
    if scenario.node.release_pinned and scenario.node.options.release.name != kubelet:
        pytest.skip(f"pinned to kubelet {scenario.node.options.release.name}")
    result = await replay(scenario.on(RELEASES[kubelet]), ReplayOptions(deadline_scale=AUTO))
    assert result.passed, failures(result)
    assert result.results, "it ran its steps"
