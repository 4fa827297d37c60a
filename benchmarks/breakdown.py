"""Where a 1-claim cycle goes, on each manager: the two driver calls, and everything else.

Both managers make the same calls to the same driver and the same claim read and checkpoint writes
around them, so a cycle splits in two: the gRPC calls (the client library's cost plus the driver's
work, which is the same for both) and the rest (the claim read, the checkpoint writes, the manager's
own work). The real kubelet's calls come from the harness's wire-level trace (``-trace``, one extra
run whose cycles are not in the main figures: tracing prints every request and answer), kubelet-dra's
from its call records. Each part is the p50 over the cycles; the rest is each operation minus its call.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Sequence

import attrs
from real_manager import go_duration
from rich.table import Table

from kubelet_dra.peers.api.calls import CallRecord

PREPARE, UNPREPARE = "NodePrepareResources", "NodeUnprepareResources"
_TRACE = re.compile(r"^TRACE \S+ grpc .* method=\S+/(NodePrepareResources|NodeUnprepareResources) .* took=(\S+) ")


@attrs.frozen
class Breakdown:
    manager: str
    prepare_call: float
    prepare_rest: float
    unprepare_call: float
    unprepare_rest: float

    @classmethod
    def of(
        cls,
        manager: str,
        operations: tuple[Sequence[float], Sequence[float]],
        calls: tuple[Sequence[float], Sequence[float]],
    ) -> Breakdown:
        """From each cycle's prepare and unprepare times and the matching call times, in the same order."""
        (prepare, unprepare), (prepare_calls, unprepare_calls) = operations, calls
        if len(prepare) != len(prepare_calls) or len(unprepare) != len(unprepare_calls):
            raise ValueError(f"{manager}: {len(prepare)} prepares but {len(prepare_calls)} prepare calls")
        return cls(
            manager,
            statistics.median(prepare_calls),
            statistics.median(op - call for op, call in zip(prepare, prepare_calls, strict=True)),
            statistics.median(unprepare_calls),
            statistics.median(op - call for op, call in zip(unprepare, unprepare_calls, strict=True)),
        )


def traced_calls(output: str) -> tuple[list[float], list[float]]:
    """The harness's prepare and unprepare call durations, in order, from its ``-trace`` lines."""
    found: dict[str, list[float]] = {PREPARE: [], UNPREPARE: []}
    for line in output.splitlines():
        if match := _TRACE.match(line.strip()):
            found[match[1]].append(go_duration(match[2]))
    return found[PREPARE], found[UNPREPARE]


def recorded_calls(records: Sequence[CallRecord]) -> tuple[list[float], list[float]]:
    """kubelet-dra's prepare and unprepare call durations, in order, from its node's call records."""
    durations: dict[str, list[float]] = {PREPARE: [], UNPREPARE: []}
    for record in sorted(records, key=lambda record: record.started_at):
        method = record.method.rsplit("/", 1)[-1]
        if method in durations and not record.streaming:
            durations[method].append(record.duration)
    return durations[PREPARE], durations[UNPREPARE]


COLUMNS = ("manager", "prepare call", "rest of prepare", "unprepare call", "rest of unprepare")
TITLE = "Where a 1-claim cycle goes (p50, ms): the driver calls, and the rest of each operation"
CAPTION = (
    "the rest: the claim read, the checkpoint writes, the manager's own work; the real kubelet's calls from"
    " one extra traced run of its harness"
)


def cells(row: Breakdown) -> list[str]:
    parts = (row.prepare_call, row.prepare_rest, row.unprepare_call, row.unprepare_rest)
    return [row.manager, *(f"{part * 1e3:.2f}" for part in parts)]


def table(rows: Sequence[Breakdown]) -> Table:
    result = Table(title=TITLE)
    for column in COLUMNS:
        result.add_column(column, justify="right")
    for row in rows:
        result.add_row(*cells(row))
    result.caption = CAPTION
    return result
