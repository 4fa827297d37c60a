"""The normalized status history: what differs between runs and runtimes is dropped, what a user sees is kept."""

from __future__ import annotations

from kubelet_dra.pods.history import GONE, from_the_kubelet, history, status_line


def pod(phase: str, *, uid: str, at: str, deleting: bool = False, state: dict | None = None) -> dict:
    meta = {"name": "p", "uid": uid, "resourceVersion": uid, **({"deletionTimestamp": at} if deleting else {})}
    container = {"name": "c", "ready": phase == "Running", "started": phase == "Running", "imageID": uid}
    container["state"] = state or {"running": {"startedAt": at}}
    conditions = [{"type": "Ready", "status": "True", "lastTransitionTime": at}]
    return {"metadata": meta, "status": {"phase": phase, "conditions": conditions, "containerStatuses": [container]}}


def test_two_runs_that_differ_only_in_uids_times_and_versions_have_one_history() -> None:
    first = [pod("Running", uid="a", at="2026-01-01T00:00:00Z"), None]
    second = [pod("Running", uid="b", at="2026-06-06T12:00:00Z"), None]
    assert history(first) == history(second) == ["Running deleting=no | Ready=True | c: running ready started", GONE]


def test_consecutive_repeats_are_one_line_and_deletion_shows() -> None:
    lines = history(
        [
            pod("Running", uid="a", at="1"),
            pod("Running", uid="b", at="2"),
            pod("Running", uid="c", at="3", deleting=True),
        ]
    )
    assert [line.split(" | ")[0] for line in lines] == ["Running deleting=no", "Running deleting=yes"]


def test_a_terminated_container_shows_its_exit_code_and_a_failures_reason_only() -> None:
    completed = {"terminated": {"exitCode": 0, "reason": "Completed", "finishedAt": "1"}}
    unknown = {"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown"}}
    assert status_line(pod("Succeeded", uid="a", at="1", state=completed)).endswith(
        "c: terminated exit=0 unready unstarted"
    )
    assert status_line(pod("Failed", uid="a", at="1", state=unknown)).endswith(
        "c: terminated exit=137 (ContainerStatusUnknown) unready unstarted"
    )


def test_the_control_planes_lines_before_the_nodes_first_status_are_left_out() -> None:
    scheduled = {
        "metadata": {},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]},
    }
    lines = history([{"metadata": {}, "status": {"phase": "Pending"}}, scheduled, pod("Running", uid="a", at="1")])
    assert from_the_kubelet(lines) == ["Running deleting=no | Ready=True | c: running ready started"]
