"""The normalized status history: what differs between runs and runtimes is dropped, what a user sees is kept."""

from __future__ import annotations

from kubelet_dra.workbench.fidelity.history import GONE, from_the_kubelet, history, status_line, without_transient


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


WAITING = (
    "ContainersReady=False(ContainersNotReady) Initialized=True PodReadyToStartContainers={up}"
    " | c: waiting (ContainerCreating)"
)
SANDBOX_DOWN = f"Pending deleting=no | {WAITING.format(up='False')} unready unstarted"
SANDBOX_UP = f"Pending deleting=no | {WAITING.format(up='True')} unready unstarted"
RUNNING = "Running deleting=no | Ready=True | c: running ready started"


def test_the_creating_statuses_the_real_kubelet_writes_or_skips_before_a_pod_runs_are_left_out() -> None:
    """Kubelet 1.36.2 wrote the sandbox-down status, the sandbox-up one, or both, before the same pod ran."""
    seen = [[SANDBOX_DOWN, SANDBOX_UP, RUNNING, GONE], [SANDBOX_DOWN, RUNNING, GONE], [SANDBOX_UP, RUNNING, GONE]]
    assert {tuple(without_transient(lines)) for lines in seen} == {(RUNNING, GONE)}


def test_the_creating_status_of_a_pod_that_never_ran_is_kept() -> None:
    deleted = SANDBOX_DOWN.replace("deleting=no", "deleting=yes")
    assert without_transient([SANDBOX_DOWN, deleted, GONE]) == [SANDBOX_DOWN, deleted, GONE]


def test_the_completed_conditions_before_the_terminal_phase_are_left_out_and_the_stopped_containers_kept() -> None:
    """Kubelet 1.36.2 wrote the completed conditions with phase Running, or not, just before phase Succeeded; it
    shows the stopped containers (ContainersNotReady) while an unprepare is failing or after a restart."""
    ended = "c: terminated exit=0 unready unstarted"
    stopped = f"Running deleting=yes | ContainersReady=False(ContainersNotReady) | {ended}"
    completing = f"Running deleting=yes | ContainersReady=False(PodCompleted) | {ended}"
    succeeded = f"Succeeded deleting=yes | ContainersReady=False(PodCompleted) | {ended}"
    assert without_transient([RUNNING, stopped, completing, succeeded, GONE]) == [RUNNING, stopped, succeeded, GONE]
    assert without_transient([RUNNING, completing, GONE]) == [RUNNING, completing, GONE]
