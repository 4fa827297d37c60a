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
    lines: list[str] = []
    for pod in pods:
        line = GONE if pod is None else status_line(pod)
        if not lines or lines[-1] != line:
            lines.append(line)
    return lines


def from_the_kubelet(lines: list[str]) -> list[str]:
    """The lines from the node's first status write on (the first with container statuses): those before are the
    scheduler's and controllers', which vary with the control plane and its timing."""
    first = next((index for index, line in enumerate(lines) if not line.endswith("| ")), len(lines))
    return lines[first:]


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
