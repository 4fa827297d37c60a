"""``replay --real-kubelet --real-manager``: which files go to the real DRA manager, and what it refuses before
anything starts. Stand-in binaries that only exist are enough: ``--check`` runs nothing (the comparison against
the real dra-manager-harness is tests/interop/test_replay_compare_real_manager.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import kubelet_dra

from kubelet_dra.workbench.scenarios import onrealkubelet as realkubelet
from kubelet_dra.workbench.scenarios.loader import load

REPO = Path(__file__).resolve().parents[3]
LIBRARY = REPO / "scenarios"


@pytest.fixture
def binaries(tmp_path: Path) -> tuple[str, str]:
    kubelet, harness = tmp_path / "kubelet", tmp_path / "dra-manager-harness"
    kubelet.write_text("#!/bin/sh\necho 'Kubernetes v1.36.2'\n")
    harness.write_text("#!/bin/sh\nexit 1\n")
    for binary in (kubelet, harness):
        binary.chmod(0o755)
    return str(kubelet), str(harness)


async def _replay(*args: str) -> tuple[int, str]:
    code, out, err = await kubelet_dra("replay", *args, "--check")
    assert "Traceback" not in err, err
    return code, out + err


async def test_a_by_hand_file_needs_neither_a_runtime_nor_root_on_the_real_manager(binaries: tuple[str, str]):
    kubelet, harness = binaries
    code, text = await _replay(
        str(LIBRARY / "prepare-unprepare-by-hand.yaml"), "--real-kubelet", kubelet, "--real-manager", harness
    )
    assert code == 0 and "1 scenario file(s) are valid" in text


async def test_a_pod_bound_to_the_node_is_refused_on_the_real_manager(binaries: tuple[str, str]):
    kubelet, harness = binaries
    path = LIBRARY / "prepare-while-unpreparing-1-36.yaml"
    code, text = await _replay(str(path), "--real-kubelet", kubelet, "--real-manager", harness)
    assert code == 2
    assert f"{path}:29: step createPod p1 is bound to node-1: the real DRA manager runs no pod worker" in text
    assert "step prepare" not in text, "by hand is what the real DRA manager does"


async def test_without_the_real_manager_the_refusal_says_how_to_get_it(binaries: tuple[str, str]):
    kubelet, _ = binaries
    path = str(LIBRARY / "unprepare-pod-reference-1-36.yaml")
    code, text = await _replay(path, "--real-kubelet", kubelet, "--cri-cmd", "fake-cri -listen unix://{cri_socket}")
    assert code == 2 and "with --real-manager HARNESS the by-hand steps run on the real DRA manager" in text


async def test_a_harness_that_is_not_a_program_or_has_no_kubelet_is_a_usage_error(binaries: tuple[str, str], tmp_path):
    kubelet, harness = binaries
    path = str(LIBRARY / "prepare-unprepare-by-hand.yaml")
    code, text = await _replay(path, "--real-kubelet", kubelet, "--real-manager", str(tmp_path / "missing"))
    assert code == 2 and "--real-manager" in text and "is not an executable file" in text
    code, text = await _replay(path, "--real-manager", harness)
    assert code == 2 and "--real-manager goes with --real-kubelet" in text


def test_two_drivers_are_refused_on_the_real_manager():
    """The harness's trace does not name the driver of a DRA call, so a by-hand file keeps to one driver."""
    scenario = load(LIBRARY / "two-drivers-one-failing.yaml")
    assert not realkubelet.by_hand(scenario)
    found = realkubelet.refusals(scenario, "1.36", manager=True)
    assert any("drivers: 2 drivers: the real DRA manager's trace does not name the driver" in line for line in found)


def test_every_by_hand_file_of_the_library_not_pinned_to_1_37_runs_on_the_real_manager_but_one():
    """Only prepare-while-unpreparing-1-36 needs a whole kubelet (its pod worker unprepares while a step prepares)."""
    refused = {}
    for path in sorted(LIBRARY.glob("*.yaml")):
        scenario = load(path)
        pinned_to_1_37 = scenario.node.release_pinned and scenario.node.options.release.name == "1.37"
        if realkubelet.by_hand(scenario) and not pinned_to_1_37:
            refused[path.stem] = bool(realkubelet.refusals(scenario, "1.36", manager=True))
    assert refused == {
        "prepare-unprepare-by-hand": False,
        "prepare-while-unpreparing-1-36": True,
        "reprepare-duplicates-devices-1-36": False,
        "unprepare-names-from-cache-1-36": False,
        "unprepare-pod-reference-1-36": False,
    }


def test_the_report_names_the_constants_the_real_manager_runs_on():
    """No pod worker and no reconcile loop: the wiping delay and the call timeout are its only timings."""
    note = realkubelet.timing_note(load(LIBRARY / "prepare-unprepare-by-hand.yaml"), manager=True)
    assert note.startswith(
        "real DRA manager timings: wipingDelay 30 s (scenario: 2 s), callTimeout 45 s (scenario: 2 s);"
    )
    assert "syncFrequency" not in note and "reconcilePeriod" not in note
