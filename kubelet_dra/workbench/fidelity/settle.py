"""The settled point both traces end at: after the last step, until no wipe, republish or call is pending (bounded).

A trace cut right after a scenario's last step holds whatever background work its node had reached
(a wipe armed 30 s before, a driver's republish, a health stream's next message), which differs
between two nodes even on one clock. Both sides therefore go on until the same thing is true, seen
from outside alike: no driver that has stopped still has ResourceSlices on the node (a wipe is
armed), and for ``QUIET`` seconds the API server showed nothing new and the node made no call.
"""

from __future__ import annotations

import asyncio
import time

from kubelet_dra.peers.log import get_logger
from kubelet_dra.workbench.fidelity.watch import ApiWatch
from kubelet_dra.workbench.testbed import Testbed, objects

QUIET = 3.0
"""Seconds without a sighting or a call that count as settled: longer than the scenarios' republish delays and a
kubelet's 1 s reconcile loop, shorter than its 10 s back-off (a failing call that keeps being retried is work the
scenario left, and is cut at the bound)."""
POLL = 0.2


def bound(wiping_delay: float) -> float:
    """How long a node may take to settle: a wipe armed at the last step, then the quiet after it."""
    return wiping_delay + 2 * QUIET


async def wipes_pending(bed: Testbed) -> list[str]:
    """The drivers none of whose processes runs while their ResourceSlices are still on the node."""
    running = {process.spec.name for process in bed.drivers if process.running}
    stopped = {process.spec.name for process in bed.drivers if process.spec.name} - running
    if not stopped:
        return []
    slices = await objects.list_objects(bed.kube, "ResourceSlice")
    node = bed.options.node_name
    return sorted(
        {
            spec.get("driver", "")
            for item in slices
            if (spec := item.get("spec") or {}).get("nodeName") == node and spec.get("driver") in stopped
        }
    )


async def settle(bed: Testbed, watch: ApiWatch, limit: float) -> None:
    """Wait (at most ``limit`` seconds) until the node settled."""
    log = get_logger("fidelity").v(1)
    started = time.monotonic()
    calls, quiet_since = len(bed.calls()), started
    while time.monotonic() - started < limit:
        await asyncio.sleep(POLL)
        now, count = time.monotonic(), len(bed.calls())
        if count != calls:
            calls, quiet_since = count, now
        quiet_since = max(quiet_since, watch.last_change)
        if now - quiet_since >= QUIET and not await wipes_pending(bed):
            log.info("Settled", seconds=round(now - started, 1))
            return
    log.info("Not settled within the bound", seconds=limit, wipesPending=await wipes_pending(bed))
