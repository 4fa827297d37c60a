"""The benchmarks of ``python -m benchmarks`` at its smoke size: each runs to the end and reports its figures.

Their speed is not judged here (that is what the benchmarks themselves are for); a change that breaks
one, or makes it stop producing a figure, fails the build instead of rotting until someone runs it.
The API server, load and registration benchmarks run once each, as a user types them, in
``test_standalone_smoke.py`` (their tables, and these figures in what they write); the benchmarks that need the
real programs of ``../shared/interop`` run in ``tests/interop``.
"""

from __future__ import annotations

import pytest
from benchsmoke import figures, missing

FIGURES = {
    "manager": [
        "overhead vs bare gRPC, reference --no-op, embedded API server, 1 claim(s), 1 at once",
        "cycle p50, reference --no-op, embedded API server, 1 claim(s), 1 at once",
        "throughput, reference --no-op, embedded API server, 1 claim(s), 16 at once",
        "throughput, reference --no-op, embedded API server, 4 claim(s), 16 at once",
    ],
    "nodes": [
        "all Ready with slices, 2 nodes, embedded API server",
        "memory per node, 2 nodes, embedded API server",
        "steady-state CPU, 2 nodes, embedded API server",
        "pods to Running, 2 nodes, embedded API server",
        "nodes Ready during the pods, 2 nodes, embedded API server",
    ],
    "scale": [
        "prepare + unprepare, 50 pods × 2 claims, 4 drivers",
        "peak RSS, 50 pods × 2 claims, 4 drivers",
        "one checkpoint write at 1,000 claims",
    ],
    "tap": [
        "GetInfo direct p50/p95/p99",
        "GetInfo through the tap p50/p95/p99",
        "GetInfo added by the tap, p50 / p99",
        "NodeUnprepareResources direct p50/p95/p99",
        "NodeUnprepareResources through the tap p50/p95/p99",
        "NodeUnprepareResources added by the tap, p50 / p99",
    ],
}


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_each_benchmark_runs_at_smoke_size_and_reports_its_figures(name: str) -> None:
    found = figures("-m", "benchmarks", "--smoke", "--only", name)
    assert not missing(found, FIGURES[name]), [figure["name"] for figure in found]
