"""When a pod worker syncs its pod again: the kubelet's pod-worker back-off, resync and PLEG wait, decided here only.

The kubelet's pod workers (``completeWork`` in its ``pod_workers.go``) requeue a pod after each sync:
after a sync that failed, the back-off (``backOffPeriod``, 10 s); after one that succeeded, the resync
interval (``--sync-frequency``, 60 s); each plus up to 50 % jitter; after a phase change (the pod's
containers stopped), at once. A failed prepare counts as a sync that succeeded (the pod stays Pending),
so it is tried again at the resync; a failed unprepare, final status or final delete is an error of the
sync, tried again after the back-off. A change of the pod wakes its worker at once.

Whatever wakes it, a worker syncs a pod only once the node's PLEG has relisted the runtime after the
worker's previous sync (``podWorkerLoop`` waits in ``podCache.GetNewerThan(uid, lastSyncTime)``; the
generic PLEG relists every second, one clock for the whole node): every sync but a pod's first (a
worker's first, after a kubelet restart too) waits for the next relist, up to a second. So a deleted
pod is stopped and unprepared at the relist after its deletion is seen, and its deletion finished at the
relist after that (the terminated sync, then the status manager's delete); a pod that joins a shared
claim within those waits, or at the same relist (stopping the containers comes first:
``CONTAINER_STOP_TIME``), finds the claim prepared and keeps it so.
"""

from __future__ import annotations

import asyncio
import math
import random

import attrs

from kubelet_dra.kubelet.wait import jitter

DEFAULT_BACK_OFF_PERIOD = 10.0
"""The kubelet's ``backOffPeriod``: the wait after a pod sync that failed."""
DEFAULT_SYNC_FREQUENCY = 60.0
"""The kubelet's ``--sync-frequency``: the wait after a pod sync that succeeded."""
SYNC_FREQUENCY_PER_BACK_OFF = DEFAULT_SYNC_FREQUENCY / DEFAULT_BACK_OFF_PERIOD
"""A node given only a back-off period keeps the kubelet's ratio: a resync is six back-offs."""
JITTER_FACTOR = 0.5
"""``workerBackOffPeriodJitterFactor`` and ``workerResyncIntervalJitterFactor``: up to 50 % more."""
PLEG_RELIST_PERIOD = 1.0
"""The generic PLEG's ``RelistPeriod``: how often the kubelet relists its runtime's pods."""
CONTAINER_STOP_TIME = 0.1
"""How long a terminating sync takes to stop the pod's containers before it unprepares its claims: kubelet-dra
runs none, the kubelet asks its runtime to stop them and reads their state back (milliseconds on Kubernetes'
fake runtime; a real runtime waits for the processes to exit). A pod synced at the same relist reads its
claims from the API server meanwhile (a few ms), so it references a shared claim before the unprepare looks, as
on the real kubelet."""


@attrs.frozen
class PodSyncPeriods:
    """The pod workers' waits between syncs of one pod; a node's one setting for each."""

    back_off_period: float = DEFAULT_BACK_OFF_PERIOD
    """After a failed sync: an unprepare, the final status or the final delete (``podBackOffPeriod``)."""
    sync_frequency: float = attrs.field(
        default=attrs.Factory(lambda self: self.back_off_period * SYNC_FREQUENCY_PER_BACK_OFF, takes_self=True)
    )
    """After a sync that succeeded, a failed prepare included (``syncFrequency``); default six back-offs."""
    relist_period: float = PLEG_RELIST_PERIOD
    """The node's PLEG relist clock (``RelistClock``): every sync but a pod's first waits for its next relist."""

    def back_off(self, rng: random.Random) -> float:
        """The wait before a failed sync is tried again."""
        return jitter(self.back_off_period, JITTER_FACTOR, rng)

    def resync(self, rng: random.Random) -> float:
        """The wait before a synced pod is synced again (unless it changes first)."""
        return jitter(self.sync_frequency, JITTER_FACTOR, rng)


class RelistClock:
    """The node's PLEG relists, one every ``period`` from the node's start (the first at once, as the kubelet syncs
    no pod before its PLEG's first relist); a pod worker waits here for the first relist after its last sync."""

    def __init__(self, period: float) -> None:
        self.period = period
        self._last = -math.inf
        self._relisted = asyncio.Event()

    @property
    def last(self) -> float:
        """When the latest relist started (a ``now()``; ``-math.inf`` before the first)."""
        return self._last

    @staticmethod
    def now() -> float:
        """The clock's time: the running loop's monotonic seconds."""
        return asyncio.get_running_loop().time()

    async def run(self) -> None:
        while True:
            self._last = self.now()
            relisted, self._relisted = self._relisted, asyncio.Event()
            relisted.set()
            await asyncio.sleep(self.period)

    async def newer_than(self, synced: float) -> None:
        """Return once a relist has started after ``synced`` (a ``now()``; ``-math.inf``: after the first relist)."""
        while self._last <= synced:
            await self._relisted.wait()
