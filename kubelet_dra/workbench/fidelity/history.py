"""A pod's status history in one normalized form, so that two kubelets' histories compare as a diff.

Each pod object seen (watch events, in order) becomes one line of what a user or a controller acts
on: phase, whether it is being deleted, the conditions (type, status, reason) and each container's
state (waiting/running/terminated, reason, exit code, ready, started). UIDs, times, resource
versions, IPs, image names and IDs and the runtime's words for a terminated container are dropped
(they differ between runs and runtimes); consecutive equal lines are one. The API object's removal
is the line ``gone``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

GONE = "gone"
CREATING = "Pending deleting=no |"
"""The start of a pod's line while its containers are being created (with ``waiting (ContainerCreating)``)."""
SANDBOX_UP = "PodReadyToStartContainers=True"
COMPLETING = "Running deleting=yes | ContainersReady=False(PodCompleted)"
"""A deleted pod's containers stopped, shown complete while its resources (its claims) are being released: the
phase follows once they are."""
TERMINAL = ("Succeeded ", "Failed ")


def status_line(pod: Mapping[str, Any]) -> str:
    """One pod object as a line, e.g. ``Running deleting=no | Ready=True ... | c: running ready started``."""
    status = pod.get("status") or {}
    deleting = "yes" if (pod.get("metadata") or {}).get("deletionTimestamp") else "no"
    conditions = " ".join(
        f"{entry.get('type')}={entry.get('status')}" + (f"({entry['reason']})" if entry.get("reason") else "")
        for entry in sorted(status.get("conditions") or [], key=lambda entry: str(entry.get("type")))
    )
    containers = "; ".join(_container(entry) for entry in status.get("containerStatuses") or [])
    return f"{status.get('phase', '')} deleting={deleting} | {conditions} | {containers}"


def history(pods: Iterable[Mapping[str, Any] | None]) -> list[str]:
    """The lines of a pod's objects in order (``None``: the object was deleted), consecutive repeats dropped."""
    return _once(GONE if pod is None else status_line(pod) for pod in pods)


def from_the_kubelet(lines: list[str]) -> list[str]:
    """The lines from the node's first status write on (the first with container statuses), without the transient
    ones: those before are the scheduler's and controllers', which vary with the control plane and its timing."""
    first = next((index for index, line in enumerate(lines) if not line.endswith("| ")), len(lines))
    return without_transient(lines[first:])


def without_transient(lines: list[str]) -> list[str]:
    """The lines without those the real kubelet writes or skips as its status manager finds the pod on the way to
    the next: the pod's ``CREATING`` ones it ran after and the one with its sandbox up (kubelet 1.36.2 wrote the
    sandbox-down one, the sandbox-up one or both before a pod ran; a pod whose prepare fails keeps the first), and
    the ``COMPLETING`` one before the pod's terminal phase."""
    kept = []
    for index, line in enumerate(lines):
        later = lines[index + 1 :]
        creating = line.startswith(CREATING) and "waiting (ContainerCreating)" in line
        ran_after = any(next_line.startswith("Running ") for next_line in later)
        completing = line.startswith(COMPLETING) and any(next_line.startswith(TERMINAL) for next_line in later)
        if not (completing or (creating and (ran_after or SANDBOX_UP in line))):
            kept.append(line)
    return _once(kept)


def _once(lines: Iterable[str]) -> list[str]:
    kept: list[str] = []
    for line in lines:
        if not kept or kept[-1] != line:
            kept.append(line)
    return kept


def _container(entry: Mapping[str, Any]) -> str:
    state = entry.get("state") or {}
    kind = next(iter(state), "none")
    detail = state.get(kind) or {}
    words = [f"{entry.get('name')}: {kind}"]
    if kind == "waiting" and detail.get("reason"):
        words.append(f"({detail['reason']})")
    if kind == "terminated":
        words.append(f"exit={detail.get('exitCode')}")
        if detail.get("exitCode") != 0:
            words.append(f"({detail.get('reason', '')})")
    words += ["ready" if entry.get("ready") else "unready", "started" if entry.get("started") else "unstarted"]
    return " ".join(words)
