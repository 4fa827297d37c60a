"""Tracing a replay: the API server watched from staging to the settled end, then the calls and the checkpoint.

``Tracer.observe`` is the replay's observer (``ReplayOptions.observe``): it works on either
testbed, since both show the node from outside the same way (the API server, a call record, the
checkpoint file in the node's state dir).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from kubelet_dra.kubelet.cm.dra.state.checkpoint import Checkpoint, ClaimInfoState, decode, read_bytes
from kubelet_dra.workbench.fidelity import columns
from kubelet_dra.workbench.fidelity.columns import Trace
from kubelet_dra.workbench.fidelity.settle import settle
from kubelet_dra.workbench.fidelity.watch import ApiWatch
from kubelet_dra.workbench.testbed import Testbed


def checkpoint_entries(bed: Testbed) -> list[ClaimInfoState]:
    """The node's checkpoint now (the real kubelet's own file in its root dir, or the simulated node's)."""
    path = Checkpoint(bed.state_dir).path
    return decode(read_bytes(path), where=str(path)) if path.exists() else []


class Tracer:
    """Observe one replay; afterwards :attr:`trace` holds its five columns (empty when it could not be staged).

    With ``settle`` (seconds), the trace goes on after the last step until the node settled, at most that long
    (``kubelet_dra.workbench.fidelity.settle``)."""

    def __init__(self, settle: float = 0.0) -> None:
        self.trace = Trace.from_json({})
        self.settle = settle

    @contextlib.asynccontextmanager
    async def observe(self, bed: Testbed) -> AsyncIterator[None]:
        watch = ApiWatch(bed.kube)
        async with watch:
            yield
            if self.settle:
                await settle(bed, watch, self.settle)
        # the watches have settled; the node and its drivers still run
        labels = columns.claim_labels(watch.seen("claims"))
        self.trace = Trace(
            {
                "calls": tuple(columns.calls([record.to_json() for record in bed.calls()])),
                "pod status": tuple(columns.pod_status(watch.seen("pods"))),
                "events": tuple(columns.events(watch.seen("events"), labels)),
                "slices": tuple(columns.slices(watch.seen("slices"))),
                "checkpoint": tuple(columns.checkpoint(checkpoint_entries(bed), labels)),
            }
        )
