"""Benchmark of the DRA manager at scale: 10,000 pods × 2 claims across 4 drivers, and the checkpoint's write cost.

Part 1: a ``Testbed`` node (embedded API server) registers 4 reference drivers, each its own process
in ``--no-op`` mode; one ``DRAManager`` (checkpoint on) prepares every pod, then unprepares every pod,
``--concurrency`` pods at a time as the kubelet's pod workers would. Each pod's 2 claims go to 2 of
the 4 drivers. The claims are served from memory (made up from their names on each read), so the
figure is the manager's: its cache, its checkpoint, its gRPC calls. Measured: wall time, pods per
second and the process's peak RSS (kernel's VmHWM; the drivers are other processes).

Part 2: the checkpoint file at 100 … 20,000 claims (each with one device and its CDI ID, as the
example driver prepares them): file size, and what one write costs when every entry is encoded
anew (the kubelet's way) and when only the changed entry is (``Encoder``, the same bytes).

Targets: 10,000 pods in ≤ 60 s and ≤ 300 MB peak RSS on 2 cores.

Run: ``python benchmarks/scale_bench.py [--pods 10000] [--concurrency 64] [--curve 100,1000,5000,20000]
[--results FILE]``; ``--markdown RESULTS`` prints benchmarks/README.md's table of a results file.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
from common import (
    Figure,
    add_results_arguments,
    load,
    peak_rss_mb,
    print_markdown_and_exit,
    save_results,
    write_json,
)
from rich.console import Console
from rich.table import Table

from kubelet_dra.kubelet.cm.dra import Checkpoint, ClaimInfoState, DeviceState, DRAManager
from kubelet_dra.kubelet.cm.dra.state.checkpoint import Encoder, encode
from kubelet_dra.kubelet.metrics.metrics import DRAMetrics
from kubelet_dra.workbench.testbed import REFERENCE_DRIVER, DriverSpec, Testbed, TestbedOptions, manifests

NODE = "scale-node"
DRIVERS = tuple(f"dev{index}.example.com" for index in range(4))
CLAIMS_PER_POD = 2
NAMESPACE = "default"
TARGET_SECONDS = 60.0
TARGET_RSS_MB = 300.0
WRITES_PER_POINT = 5


class ClaimSource:
    """``KubeClient.get`` for the one request the manager makes: a claim, allocated and reserved for its pod.

    Claim ``p<pod>-c<n>`` belongs to pod ``p<pod>`` and is allocated one device of driver ``(pod + n) % 4``.
    """

    async def get(self, path: str, query: dict[str, str] | None = None) -> dict[str, Any]:
        name = path.rpartition("/")[2]
        pod, _, number = name[1:].partition("-c")
        index, driver = int(pod), DRIVERS[(int(pod) + int(number)) % len(DRIVERS)]
        return {
            "metadata": {"name": name, "namespace": NAMESPACE, "uid": str(uuid.uuid5(uuid.NAMESPACE_URL, name))},
            "status": {
                "allocation": {
                    "devices": {"results": [{"driver": driver, "pool": NODE, "device": "d0", "request": "device"}]}
                },
                "reservedFor": [{"resource": "pods", "name": f"p{index}", "uid": pod_uid(index)}],
            },
        }


def pod_uid(index: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_DNS, f"p{index}"))


def pod(index: int) -> dict[str, Any]:
    manifest = manifests.pod(
        f"p{index}", NODE, claims={f"c{n}": f"p{index}-c{n}" for n in range(CLAIMS_PER_POD)}, namespace=NAMESPACE
    )
    manifest["metadata"]["uid"] = pod_uid(index)
    return manifest


@attrs.frozen
class Parts:
    """What ``DRAManager`` uses of a node: the testbed node's plugin store and metrics, claims from memory."""

    name: str
    kube: Any
    plugins: Any
    metrics: DRAMetrics


@attrs.frozen
class ScaleRun:
    pods: int
    concurrency: int
    prepare_seconds: float
    unprepare_seconds: float
    peak_rss_mb: float

    @property
    def seconds(self) -> float:
        return self.prepare_seconds + self.unprepare_seconds


@attrs.frozen
class CurvePoint:
    claims: int
    size_mb: float
    fresh_ms: float
    incremental_ms: float


async def all_pods(count: int, concurrency: int, step: Callable[[dict[str, Any]], Any]) -> float:
    """``step`` for every pod, ``concurrency`` at a time; the wall time."""
    indexes = iter(range(count))

    async def worker() -> None:
        for index in indexes:
            await step(pod(index))

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - started


async def scale(pods: int, concurrency: int) -> ScaleRun:
    async with Testbed(TestbedOptions(node_name=NODE, control_plane=False)) as bed:
        for driver in DRIVERS:
            await bed.add_driver(DriverSpec(driver, REFERENCE_DRIVER, ("--no-op", "--devices", "1")), wait=60)
        parts = Parts(NODE, ClaimSource(), bed.node.plugins, bed.node.metrics)
        manager = DRAManager(parts, Checkpoint(bed.workdir / "scale-state"))  # type: ignore[arg-type]
        prepared = await all_pods(pods, concurrency, manager.prepare_resources)
        assert len(manager.cache) == pods * CLAIMS_PER_POD, f"{len(manager.cache)} claims prepared"
        unprepared = await all_pods(pods, concurrency, manager.unprepare_resources)
        assert len(manager.cache) == 0, f"{len(manager.cache)} claims left"
        return ScaleRun(pods, concurrency, prepared, unprepared, peak_rss_mb())


def checkpoint_entries(count: int) -> list[ClaimInfoState]:
    entries = []
    for index in range(count):
        claim_uid = str(uuid.uuid4())
        device = DeviceState(
            NODE, f"gpu-{index % 8}", None, ("gpu",), (f"k8s.gpu.example.com/gpu={claim_uid}-gpu-{index % 8}",)
        )
        entries.append(
            ClaimInfoState(
                claim_uid, f"p{index}-c0", NAMESPACE, frozenset({str(uuid.uuid4())}), {"gpu.example.com": (device,)}
            )
        )
    return entries


def curve_point(count: int, directory: Path) -> CurvePoint:
    """One write of ``count`` entries, each entry encoded anew, then with only one entry changed (median of 5)."""
    entries = checkpoint_entries(count)
    checkpoint, encoder = Checkpoint(directory), Encoder()
    checkpoint.write(encoder.apply({str(index): entry for index, entry in enumerate(entries)}))
    fresh, incremental = [], []
    for round_ in range(WRITES_PER_POINT):
        changed = attrs.evolve(entries[round_], pod_uids=frozenset({str(uuid.uuid4())}))
        entries[round_] = changed
        started = time.perf_counter()
        checkpoint.write(encoder.apply({str(round_): changed}))  # the encoder keeps every unchanged entry
        incremental.append(time.perf_counter() - started)
        started = time.perf_counter()
        checkpoint.store(entries)  # every entry encoded, as the kubelet does
        fresh.append(time.perf_counter() - started)
    assert checkpoint.path.read_bytes() == encode(entries)
    size = checkpoint.path.stat().st_size / 1e6
    return CurvePoint(count, size, statistics.median(fresh) * 1e3, statistics.median(incremental) * 1e3)


def report(run: ScaleRun | None, curve: list[CurvePoint]) -> list[Table]:
    tables = []
    if run is not None:
        table = Table(title=f"{run.pods:,} pods × {CLAIMS_PER_POD} claims, {len(DRIVERS)} no-op drivers, checkpoint on")
        for column in ("pods at once", "prepare all", "unprepare all", "total", "pods/s", "peak RSS"):
            table.add_column(column, justify="right")
        table.add_row(
            str(run.concurrency),
            f"{run.prepare_seconds:.1f} s",
            f"{run.unprepare_seconds:.1f} s",
            f"{run.seconds:.1f} s",
            f"{run.pods / run.seconds:.0f}",
            f"{run.peak_rss_mb:.0f} MB",
        )
        table.caption = f"targets at 10,000 pods: ≤ {TARGET_SECONDS:g} s, ≤ {TARGET_RSS_MB:g} MB"
        tables.append(table)
    if curve:
        table = Table(title="one checkpoint write (temp file, write, fsync, rename)")
        for column in ("claims", "file", "every entry encoded", "changed entry only"):
            table.add_column(column, justify="right")
        for point in curve:
            table.add_row(
                f"{point.claims:,}",
                f"{point.size_mb:.2f} MB",
                f"{point.fresh_ms:.1f} ms",
                f"{point.incremental_ms:.1f} ms",
            )
        tables.append(table)
    return tables


def figures(run: ScaleRun | None, curve: list[CurvePoint]) -> list[Figure]:
    found = []
    if run is not None:
        full = run.pods >= 10_000
        where = f"{run.pods:,} pods × {CLAIMS_PER_POD} claims, {len(DRIVERS)} drivers"
        split = f"prepare {run.prepare_seconds:.1f} s + unprepare {run.unprepare_seconds:.1f} s"
        found += [
            Figure(
                "scale",
                f"prepare + unprepare, {where}",
                f"{run.seconds:.1f} s",
                f"≤ {TARGET_SECONDS:g} s" if full else "",
                run.seconds <= TARGET_SECONDS if full else None,
                f"{split}; {run.pods / run.seconds:.0f} pods/s, {run.concurrency} at once",
            ),
            Figure(
                "scale",
                f"peak RSS, {where}",
                f"{run.peak_rss_mb:.0f} MB",
                f"≤ {TARGET_RSS_MB:g} MB" if full else "",
                run.peak_rss_mb <= TARGET_RSS_MB if full else None,
            ),
        ]
    found += [
        Figure(
            "scale",
            f"one checkpoint write at {point.claims:,} claims ({point.size_mb:.2f} MB), changed entry only",
            f"{point.incremental_ms:.1f} ms",
            spread=f"every entry encoded (the kubelet's way): {point.fresh_ms:.1f} ms",
        )
        for point in curve
    ]
    return found


async def measure(arguments: argparse.Namespace) -> tuple[ScaleRun | None, list[CurvePoint]]:
    run = await scale(arguments.pods, arguments.concurrency) if arguments.pods else None
    with tempfile.TemporaryDirectory(prefix="kd-ckpt-", dir="/tmp") as directory:
        counts = [int(count) for count in arguments.curve.split(",") if count]
        curve = [curve_point(count, Path(directory)) for count in counts]
    return run, curve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=10_000, help="pods (0: only the curve; default: %(default)s)")
    parser.add_argument("--concurrency", type=int, default=64, help="pods at once (default: %(default)s)")
    parser.add_argument("--curve", default="100,1000,5000,20000", help="checkpoint sizes in claims, or ''")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    add_results_arguments(parser)
    args = parser.parse_args()
    print_markdown_and_exit(args)
    started_load = load()
    scaled, points = asyncio.run(measure(args))
    document = {"run": attrs.asdict(scaled) if scaled else None, "curve": [attrs.asdict(point) for point in points]}
    found = figures(scaled, points)
    save_results(args.results, "scale_bench.py", document, found, started_load)
    if args.output == "json":
        write_json({"loadAtStart": started_load, **document}, found)
        return
    console = Console(width=120)
    for table in report(scaled, points):
        console.print(table)
    console.print(f"load at start {started_load}, at end {load()}")


if __name__ == "__main__":
    main()
