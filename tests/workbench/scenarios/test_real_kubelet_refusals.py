"""``replay --real-kubelet``: what it refuses before anything starts, and the deadlines it runs on.

A stand-in binary that only answers ``--version`` as a kubelet does is enough here: nothing is
started (the replays on the real kubelet 1.36.2 are in tests/interop/test_replay_real_kubelet.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import kubelet_dra

from kubelet_dra.workbench.scenarios import onrealkubelet as realkubelet
from kubelet_dra.workbench.scenarios.loader import load

REPO = Path(__file__).resolve().parents[3]
LIBRARY = REPO / "scenarios"
CRI = "fake-cri -listen unix://{cri_socket}"


@pytest.fixture
def kubelet_136(tmp_path: Path) -> str:
    binary = tmp_path / "kubelet"
    binary.write_text("#!/bin/sh\necho 'Kubernetes v1.36.2'\n")
    binary.chmod(0o755)
    return str(binary)


async def _one_error(*args: str) -> str:
    """``kubelet-dra replay ARGS``: it must exit 2 with one error line (no traceback), returned."""
    code, _, err = await kubelet_dra("replay", *args)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


async def _refusal(path: Path, kubelet: str) -> str:
    """The one error of ``replay PATH --real-kubelet KUBELET … --check``."""
    return await _one_error(str(path), "--real-kubelet", kubelet, "--cri-cmd", CRI, "--check")


async def test_steps_that_need_the_simulated_node_are_refused_by_file_and_line(kubelet_136: str):
    path = LIBRARY / "prepare-unprepare-by-hand.yaml"
    line = await _refusal(path, kubelet_136)
    assert f"{path}:37: step prepare calls the simulated node's DRA manager by hand" in line
    assert ":43: step unprepare" in line and "expectation cdi" not in line
    assert "3 step(s) or setting(s) cannot run on the real kubelet 1.36" in line
    assert "fix: replay those files on the simulated node" in line


async def test_wipes_and_diagnoses_are_not_refused(kubelet_136: str):
    """A killed driver and a removed service socket reach the real kubelet through the tap
    (tests/workbench/tap/test_tap_reach), its pending wipes are read from its log, and kubelet-dra's own diagnosis
    is skipped there: these files run on the real kubelet."""
    names = ("service-reconnect", "legacy-v1alpha4-driver-rejected", "register-after-getinfo-failure")
    files = [str(LIBRARY / f"{name}.yaml") for name in names]
    code, out, err = await kubelet_dra("replay", *files, "--real-kubelet", kubelet_136, "--cri-cmd", CRI, "--check")
    assert code == 0, err
    assert "3 scenario file(s) are valid" in out


async def test_a_file_pinned_to_another_release_is_refused(kubelet_136: str):
    path = LIBRARY / "health-negotiation-1-37.yaml"
    assert "node.kubeletVersion 1.37 is not the real kubelet's 1.36" in await _refusal(path, kubelet_136)


async def test_the_library_files_it_accepts_validate(kubelet_136: str):
    names = (
        "apiserver-restart",
        "pod-lifecycle",
        "service-socket-after-registration",
        "slices-wiped-after-plugin-stops",
    )
    files = [str(LIBRARY / f"{name}.yaml") for name in names]
    code, out, err = await kubelet_dra("replay", *files, "--real-kubelet", kubelet_136, "--cri-cmd", CRI, "--check")
    assert code == 0, err
    assert "4 scenario file(s) are valid" in out


@pytest.mark.parametrize(
    ("flags", "wanted"),
    [
        (["--cri-cmd", CRI], "--cri-cmd, --kubeconfig and --compare go with --real-kubelet"),
        (["--real-kubelet", "KUBELET", "--cri-cmd", CRI, "--timing", "file"], "--timing goes with --compare"),
        (["--real-kubelet", "KUBELET"], "--real-kubelet needs --cri-cmd"),
        (["--real-kubelet", "/nonexistent/kubelet", "--cri-cmd", CRI], "is not an executable file"),
        (["--real-kubelet", "KUBELET", "--cri-cmd", "fake-cri -listen unix:///tmp/x.sock"], "has no {cri_socket}"),
    ],
)
async def test_bad_flags_are_one_line_usage_errors(kubelet_136: str, flags: list[str], wanted: str):
    flags = [kubelet_136 if flag == "KUBELET" else flag for flag in flags]
    assert wanted in await _one_error(str(LIBRARY / "apiserver-restart.yaml"), *flags)


def test_deadlines_follow_the_real_timing():
    scenario = load(str(LIBRARY / "pod-lifecycle.yaml"))  # timing: syncFrequency 300ms, within 3s
    real = realkubelet.on_real_kubelet(scenario)
    assert realkubelet.extra_seconds(scenario) == pytest.approx(89.7)
    condition = next(step for step in real.steps if step.conditions).conditions[0]
    assert condition.within == pytest.approx(3 + 89.7)
    note = realkubelet.timing_note(scenario)
    assert "wipingDelay 30 s (scenario: 2 s)" in note and "syncFrequency 90 s (scenario: 0.3 s)" in note


def test_a_hold_that_outlasts_the_wiping_delay_outlasts_the_real_one():
    kept = load(str(LIBRARY / "slices-kept-when-plugin-restarts-in-time.yaml"))  # wipingDelay 3s, hold 3500ms
    (condition,) = realkubelet.on_real_kubelet(kept).steps[-1].conditions
    assert (condition.name, condition.hold) == ("slices kept past the wiping delay", pytest.approx(30.5))
    wiped = load(str(LIBRARY / "slices-wiped-after-plugin-stops.yaml"))  # wipingDelay 2s, hold 1s
    waiting = next(c for step in realkubelet.on_real_kubelet(wiped).steps for c in step.conditions if c.hold)
    assert (waiting.name, waiting.hold) == ("slices kept while the wipe waits", 1.0)


def test_one_clock_gives_kubelet_dra_the_real_constants_and_the_real_deadlines():
    """``--compare``'s default: the file's 300 ms retries and 2 s wiping delay become the real kubelet's, and every
    deadline is the one the real kubelet's replay gets."""
    scenario = load(str(LIBRARY / "pod-lifecycle.yaml"))
    ours = realkubelet.on_kubelet_clock(scenario)
    options = ours.node.options
    assert (options.wiping_delay, options.call_timeout, options.reconcile_period) == (30.0, 45.0, 60.0)
    periods = options.pod_sync
    assert (periods.back_off_period, periods.sync_frequency, options.kubelet_timing) == (10.0, 60.0, True)
    assert ours.steps == realkubelet.on_real_kubelet(scenario).steps
    assert options.release == scenario.node.options.release
