"""kubelet-dra's trace of a scenario against the real kubelet 1.36.2's, recorded by ``replay --compare``.

``tests/fixtures/kubelet-1.36/compare/NAME.trace.json`` is the real kubelet's trace of the library
scenario NAME (on the embedded API server, with Kubernetes' fake runtime), and NAME.calls.jsonl the
tap's raw record of its driver calls in that run. Here the same scenario replays on kubelet-dra
(embedded API server, the reference driver as a process) and must give the same five columns.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from kubelet_dra.kubelet.release import RELEASES
from kubelet_dra.workbench.fidelity.columns import COLUMNS, Trace, calls
from kubelet_dra.workbench.fidelity.comparison import DIFFERS, IDENTICAL, REAL, SIMULATED, compare
from kubelet_dra.workbench.fidelity.known import known_difference
from kubelet_dra.workbench.fidelity.trace import Tracer
from kubelet_dra.workbench.scenarios.loader import load
from kubelet_dra.workbench.scenarios.replayer import ReplayOptions, replay
from kubelet_dra.workbench.tap.diff import load as load_calls

REPO = Path(__file__).resolve().parents[3]
RECORDED = REPO / "tests" / "fixtures" / "kubelet-1.36" / "compare"
UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
NAMES = sorted(path.name.removesuffix(".trace.json") for path in RECORDED.glob("*.trace.json"))


def _real(name: str) -> Trace:
    return Trace.from_json(json.loads((RECORDED / f"{name}.trace.json").read_text()))


async def _ours(name: str) -> Trace:
    tracer = Tracer()
    result = await replay(
        load(REPO / "scenarios" / f"{name}.yaml").on(RELEASES["1.36"]), ReplayOptions(observe=tracer.observe)
    )
    assert result.passed, [step.message for step in result.broken]
    return tracer.trace


def test_the_recorded_real_traces_are_there():
    assert len(NAMES) >= 3, NAMES


@pytest.mark.parametrize("name", NAMES)
async def test_kubelet_dra_gives_the_real_kubelets_trace(name: str):
    real = _real(name)
    results = compare(name, await _ours(name), real)
    assert [result.column for result in results] == list(COLUMNS)
    # identical, or (kubelet_dra.workbench.fidelity.known) a difference documented in docs/fidelity.md
    assert {result.column: result.diff for result in results if result.verdict == DIFFERS} == {}
    assert all(result.verdict == IDENTICAL for result in results if not known_difference(name, result.column))
    assert sum(bool(lines) for lines in real.columns.values()) >= 2, "a story, not empty columns that agree"


@pytest.mark.parametrize("name", NAMES)
def test_the_taps_raw_record_normalizes_to_the_recorded_column(name: str):
    raw = load_calls(RECORDED / f"{name}.calls.jsonl")
    lines = calls(raw)
    assert lines == list(_real(name).columns["calls"])
    assert not any(UID.search(line) for line in lines), "UIDs are placeholders"
    assert not any(os.path.dirname(record["endpoint"]) in line for record in raw for line in lines), "paths too"
    streams = [record for record in raw if record["method"].endswith("/NodeWatchResources")]
    drivers = {record["driver"] for record in streams}
    assert len([line for line in lines if "NodeWatchResources" in line]) == len(drivers), "one line per driver"


async def test_a_different_story_is_a_unified_diff_from_ours_to_the_real_kubelets():
    ours = await _ours(NAMES[0])
    other = _real(NAMES[1])
    differing = [result for result in compare(NAMES[0], ours, other) if result.verdict == DIFFERS]
    assert differing, "two scenarios' traces differ"
    for result in differing:
        assert result.diff[:2] == (f"--- {SIMULATED}", f"+++ {REAL}")
        assert any(line.startswith(("-", "+")) for line in result.diff[2:])


def test_which_device_each_claim_got_is_the_allocators_choice():
    """The real record of two pods, and the same with their devices swapped, read alike."""
    text = (RECORDED / "one-connection-for-all-calls.calls.jsonl").read_text()
    assert "device-0" in text and "device-1" in text
    swapped = text.replace("device-0", "device-X").replace("device-1", "device-0").replace("device-X", "device-1")
    lines = calls([json.loads(line) for line in text.splitlines()])
    assert calls([json.loads(line) for line in swapped.splitlines()]) == lines
    assert not any("<<" in line for line in lines)
