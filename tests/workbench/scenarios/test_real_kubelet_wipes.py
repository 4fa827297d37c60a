"""The ``wipe`` and ``registration`` expectations on the real kubelet read its wipe timers and connections from its
log: the lines of kubelet 1.36.2 around a restart (``unprepare-fails-across-kubelet-restart`` replayed on it), each
start's process on its own; the replays themselves are in tests/interop/test_replay_real_kubelet.py."""

from __future__ import annotations

from pathlib import Path

from kubelet_dra.workbench.realnode.realkubelet import START_MARK, armed_wipes, connected_drivers

LOG = Path(__file__).resolve().parents[2] / "fixtures" / "kubelet-1.36" / "wipes" / "kubelet.log"
GPU = "gpu.example.com"


def _starts() -> list[str]:
    return [START_MARK + part for part in LOG.read_text().split(START_MARK)[1:]]


def test_a_registration_arms_the_wipe_and_the_connection_cancels_it():
    first, _ = _starts()
    assert "Adding TimedWorkerQueue item" in first and armed_wipes(first) == []


def test_a_lost_connection_leaves_the_wipe_armed():
    _, second = _starts()
    assert armed_wipes(second) == [GPU], "the driver stopped at the end: its wipe waits out the delay"
    before_the_stop = second[: second.rindex("connected=false")]
    assert armed_wipes(before_the_stop) == []


def test_a_fired_wipe_is_no_longer_pending():
    _, second = _starts()
    fired = second + f'I1127 17:55:48.657800   12954 timed_workers.go:130] "Firing worker" item="/{GPU}"\n'
    assert armed_wipes(fired) == []


def test_the_kubelet_is_connected_to_a_driver_until_its_connection_ends():
    first, second = _starts()
    assert connected_drivers(first) == [GPU]
    assert connected_drivers(second[: second.rindex("connected=false")]) == [GPU]
    assert connected_drivers(second) == [], "the driver stopped at the end"
