"""When a pod worker syncs its pod again: the kubelet's pod-worker back-off and resync, decided here only.

The kubelet's pod workers (``completeWork`` in its ``pod_workers.go``) requeue a pod after each sync:
after a sync that failed, the back-off (``backOffPeriod``, 10 s); after one that succeeded, the resync
interval (``--sync-frequency``, 60 s); each plus up to 50 % jitter. A failed prepare counts as a
sync that succeeded (the pod stays Pending), so it is tried again at the resync; a failed unprepare,
final status or final delete is an error of the sync, tried again after the back-off. A deleted pod
given its terminal status is finished at the next PLEG relist (1 s).
"""

from __future__ import annotations

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
"""The kubelet finishes a stopped pod at the PLEG relist that sees its containers gone."""


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
    """From a deleted pod's terminal status to the end of its deletion."""

    def back_off(self, rng: random.Random) -> float:
        """The wait before a failed sync is tried again."""
        return jitter(self.back_off_period, JITTER_FACTOR, rng)

    def resync(self, rng: random.Random) -> float:
        """The wait before a synced pod is synced again (unless it changes first)."""
        return jitter(self.sync_frequency, JITTER_FACTOR, rng)
