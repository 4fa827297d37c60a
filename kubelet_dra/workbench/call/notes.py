"""The notes beside a call made by hand: a slow answer against the kubelet's deadline, and why a call failed.

They say what the kubelet would make of it (it gives up at the same deadline, it only logs a
rejected registration) and what to look at (a stale socket, the wrong socket, a method not served).
"""

from __future__ import annotations

from kubelet_dra.kubelet.cm.dra.plugin import CallRecord
from kubelet_dra.kubelet.pluginmanager.diagnosis import why_dial_failed
from kubelet_dra.peers.api.services import REGISTRATION
from kubelet_dra.workbench.call.request import GET_INFO, NOTIFY


def latency_notes(record: CallRecord, deadline: float, warning: float) -> tuple[str, ...]:
    """A note when the answer took ``warning`` seconds or more, with its share of the ``deadline``."""
    if record.duration < warning or not deadline:
        return ()
    share = record.duration / deadline * 100
    return (f"slow: answered in {record.duration:.2f} s, {share:.0f}% of the kubelet's {deadline:g} s deadline",)


async def failure_notes(record: CallRecord, target: str, deadline: float) -> tuple[str, ...]:
    """Why the call on ``target`` failed, and what the kubelet would do about it."""
    if record.status == "DEADLINE_EXCEEDED":
        return (f"no answer within {deadline:g} s: the kubelet gives up at the same deadline",)
    if record.status == "UNAVAILABLE":
        return (f"cannot connect to {target}: {await why_dial_failed(target)}",)
    if record.method == REGISTRATION.method_path(NOTIFY) and not record.request.get("plugin_registered"):
        return ("drivers on the kubeletplugin helper answer a rejection with an error; the kubelet only logs it",)
    if record.status == "UNIMPLEMENTED" and record.method == REGISTRATION.method_path(GET_INFO):
        return (f"{target} is no registration socket (those are <driver>-reg.sock in the kubelet's registry dir)",)
    if record.status == "UNIMPLEMENTED":
        return (f"{target} does not serve {record.method}",)
    return ()
