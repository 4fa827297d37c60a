"""The pod statuses a kubelet writes on a pod's way through its life, as the real kubelet 1.36 writes them.

Observed on the real kubelet (docs/fidelity.md, "Pod status"): a pod is first reported Pending with
its containers waiting (``ContainerCreating``) before its claims are prepared, then Pending with
``PodReadyToStartContainers`` once its sandbox exists, then Running. A deleted pod whose containers
were stopped is reported with them terminated (exit code 0) while its resources are released, and
only then with its terminal phase: Succeeded when every container exited 0, Failed when one never ran.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from typing import Any

CONDITION_TYPES = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
TERMINAL_PHASES = ("Succeeded", "Failed")
NOT_READY = "ContainersNotReady"
COMPLETED = "PodCompleted"
COMPLETED_EXIT_REASON = "Completed"
"""What container runtimes (containerd, CRI-O) report for a container that exited 0."""
UNKNOWN_EXIT_CODE = 137
"""The exit code the kubelet gives a container it cannot find when the pod terminates."""
UNKNOWN_REASON = "ContainerStatusUnknown"
UNKNOWN_MESSAGE = "The container could not be located when the pod was terminated"


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def pending_status(pod: Mapping[str, Any], *, sandbox_ready: bool, at: str) -> dict[str, Any]:
    """Pending: containers waiting in ``ContainerCreating``; ``sandbox_ready`` once the claims are prepared."""
    old = pod.get("status") or {}
    names = _container_names(pod)
    unready = _not_ready(names)
    conditions = {
        "PodReadyToStartContainers": _condition("True" if sandbox_ready else "False"),
        "Initialized": _condition("True"),
        "Ready": unready,
        "ContainersReady": unready,
    }
    return {
        "phase": "Pending",
        "startTime": old.get("startTime") or at,
        "conditions": _conditions(old, conditions, at),
        "containerStatuses": [
            _container(container, {"waiting": {"reason": "ContainerCreating"}}, ready=False)
            for container in _containers(pod)
        ],
    }


def running_status(pod: Mapping[str, Any], resources: Mapping[str, list[dict[str, Any]]], *, at: str) -> dict[str, Any]:
    """Running and ready; ``resources``: container name → its ``allocatedResourcesStatus`` (absent when none)."""
    old = pod.get("status") or {}
    started = old.get("startTime") or at
    previous = _previous_containers(old)
    statuses = []
    for container in _containers(pod):
        name = container["name"]
        since = (((previous.get(name) or {}).get("state") or {}).get("running") or {}).get("startedAt") or started
        status = _container(
            container, {"running": {"startedAt": since}}, ready=True, container_id=container_id(pod, name)
        )
        if resources.get(name):
            status["allocatedResourcesStatus"] = resources[name]
        statuses.append(status)
    ready = {
        kind: _condition("True") for kind in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
    }
    return {
        "phase": "Running",
        "startTime": started,
        "conditions": _conditions(old, ready, at),
        "containerStatuses": statuses,
    }


def stopped_status(pod: Mapping[str, Any], *, final: bool, at: str) -> dict[str, Any]:
    """A deleted pod whose containers were stopped. Not ``final`` (its resources are still being released): the
    phase it had, not ready. ``final``: its terminal phase, Succeeded (conditions ``PodCompleted``) when every
    container exited 0, else Failed (conditions ``ContainersNotReady``, as the real kubelet reports it)."""
    old = pod.get("status") or {}
    previous = _previous_containers(old)
    statuses = [_stopped(pod, container, previous.get(container["name"]) or {}, at) for container in _containers(pod)]
    phase = old.get("phase") or "Pending"
    if final:
        succeeded = all(status["state"]["terminated"]["exitCode"] == 0 for status in statuses)
        phase = phase if phase in TERMINAL_PHASES else "Succeeded" if succeeded else "Failed"
    if phase == "Succeeded":
        done = _condition("False", COMPLETED)
        conditions = {
            "PodReadyToStartContainers": _condition("False"),
            "Initialized": _condition("True", COMPLETED),
            "Ready": done,
            "ContainersReady": done,
        }
    else:
        unready = _not_ready(_container_names(pod))
        conditions = {"PodReadyToStartContainers": _condition("False"), "Ready": unready, "ContainersReady": unready}
    return {"phase": phase, "conditions": _conditions(old, conditions, at), "containerStatuses": statuses}


def container_id(pod: Mapping[str, Any], name: str) -> str:
    return f"kubelet-dra://{pod['metadata']['uid']}/{name}"


def _stopped(
    pod: Mapping[str, Any], container: Mapping[str, Any], previous: Mapping[str, Any], at: str
) -> dict[str, Any]:
    """A container of a deleted pod: exited 0 if it ran (a simulated container stops when asked), else never
    located, as the kubelet reports a container that never started when its pod terminates."""
    state = previous.get("state") or {}
    if "terminated" in state:
        terminated = dict(state["terminated"])
    elif started := (state.get("running") or {}).get("startedAt"):
        cid = previous.get("containerID") or container_id(pod, container["name"])
        terminated = {
            "exitCode": 0,
            "reason": COMPLETED_EXIT_REASON,
            "startedAt": started,
            "finishedAt": at,
            "containerID": cid,
        }
    else:
        terminated = {
            "exitCode": UNKNOWN_EXIT_CODE,
            "reason": UNKNOWN_REASON,
            "message": UNKNOWN_MESSAGE,
            "finishedAt": at,
        }
    status = _container(
        container, {"terminated": terminated}, ready=False, container_id=previous.get("containerID", "")
    )
    status["started"] = False
    return status


def _container(
    container: Mapping[str, Any], state: dict[str, Any], *, ready: bool, container_id: str = ""
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "name": container["name"],
        "image": container.get("image", ""),
        "imageID": "",
        "ready": ready,
        "started": ready,
        "restartCount": 0,
        "state": state,
    }
    if container_id:
        status["containerID"] = container_id
    return status


def _condition(status: str, reason: str = "", message: str = "") -> dict[str, str]:
    condition = {"status": status}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def _not_ready(names: Sequence[str]) -> dict[str, str]:
    return _condition("False", NOT_READY, f"containers with unready status: [{' '.join(names)}]")


def _conditions(old: Mapping[str, Any], wanted: Mapping[str, dict[str, str]], at: str) -> list[dict[str, Any]]:
    """Every condition type in the kubelet's order: ``wanted`` ones set, the others kept (PodScheduled is the
    scheduler's); a condition keeps its transition time while its status does not change. ``lastProbeTime`` is
    null, as the kubelet's JSON has it (a zero time) and the API server stores it: without it the status never
    equalled the pod's, and every resync of every running pod wrote it again."""
    previous = {entry.get("type"): entry for entry in old.get("conditions") or []}
    conditions = []
    for kind in CONDITION_TYPES:
        before = previous.get(kind) or {}
        wish = wanted.get(kind) or {
            key: value for key, value in before.items() if key in ("status", "reason", "message")
        }
        if not wish:
            wish = _condition("True")
        since = before.get("lastTransitionTime", at) if before.get("status") == wish["status"] else at
        conditions.append({"type": kind, **wish, "lastProbeTime": None, "lastTransitionTime": since})
    return conditions


def _containers(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list(pod["spec"].get("containers") or [])


def _container_names(pod: Mapping[str, Any]) -> list[str]:
    return [container["name"] for container in _containers(pod)]


def _previous_containers(old: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {entry.get("name", ""): entry for entry in old.get("containerStatuses") or []}
