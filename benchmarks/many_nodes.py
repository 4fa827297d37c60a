"""Benchmark of many simulated nodes in one ``kubelet-dra run --nodes`` process, each with its own driver.

For each fleet size N: one ``kubelet-dra run --nodes 'sim-{0..N-1}' --reference-driver
gpu.example.com`` process (embedded API server and N nodes) starts N reference driver processes;
the offline control plane (``kubelet-dra controlplane``, its own process) generates and allocates
one claim for one pod bound to each node; every pod is prepared and Running, then deleted and
unprepared. Measured: the time from start to every driver registered, from the pods' creation to
every pod Running (and the median over nodes of their own pod's), and from their deletion to every pod
gone; the peak RSS of the ``run`` process
(kernel's VmHWM), what each node beyond the first adds to it (against a fleet of one), and the
RSS of one driver process.

Target: at most 5 MB of ``run`` memory per additional node (one process per node costs ~94 MB).

Run: ``python benchmarks/many_nodes.py [--nodes 1,10,50] [--output json]``
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import attrs
from common import Figure, load, write_json
from rich.console import Console
from rich.table import Table

from kubelet_dra.kube.client import KubeClient
from kubelet_dra.testbed import manifests, objects

DRIVER = "gpu.example.com"
TARGET_MB_PER_NODE = 5.0
STEP_TIMEOUT = 600.0
NAMESPACE = objects.DEFAULT_NAMESPACE


@attrs.frozen
class FleetRun:
    nodes: int
    registered: float
    running: float
    first_pod: float
    """Median over the nodes of the time from the pods' creation to the node's own pod Running."""
    deleted: float
    peak_rss_mb: float
    driver_rss_mb: float


async def until(check, what: str) -> None:
    deadline = time.monotonic() + STEP_TIMEOUT
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        if time.monotonic() > deadline:
            raise SystemExit(f"benchmark: {what} not within {STEP_TIMEOUT:g} s")
        await asyncio.sleep(0.2)


def kib(pid: int, field: str) -> int:
    """A ``/proc/<pid>/status`` memory figure in KiB (VmHWM: peak RSS, VmRSS: now)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return 0


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(child) for child in (task / "children").read_text().split()]
    return found


async def one_fleet(size: int, workdir: Path) -> FleetRun:
    kubeconfig = workdir / "kubeconfig"
    lines: list[str] = []
    start = time.monotonic()
    run = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "kubelet_dra", "run", "--nodes", f"sim-{{0..{size - 1}}}"),
        *("--root-dir", str(workdir / "nodes"), "--reference-driver", DRIVER, "--kubeconfig-out", str(kubeconfig)),
        *("--pod-back-off-period", "0.5", "--sync-frequency", "0.5"),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )

    async def read() -> None:
        assert run.stdout is not None
        async for raw in run.stdout:
            lines.append(raw.decode())

    reader = asyncio.create_task(read())
    controlplane = None
    try:
        await until(lambda: any(f"{size} with a driver registered" in line for line in lines), "drivers registered")
        registered = time.monotonic() - start
        controlplane = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "kubelet_dra", "controlplane", "--kubeconfig", str(kubeconfig)),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        kube = KubeClient.from_kubeconfig(str(kubeconfig))
        await objects.apply(kube, manifests.device_class(DRIVER))
        await objects.apply(kube, manifests.claim_template("one-gpu", DRIVER))
        created = time.monotonic()
        for index in range(size):
            await objects.apply(kube, manifests.pod(f"pod-{index}", f"sim-{index}", templates={"gpu": "one-gpu"}))

        first_running: dict[str, float] = {}

        async def all_running() -> bool:
            for pod in await objects.list_objects(kube, "Pod", NAMESPACE):
                if (pod.get("status") or {}).get("phase") == "Running":
                    first_running.setdefault(pod["metadata"]["name"], time.monotonic() - created)
            return len(first_running) == size

        await until(all_running, "pods Running")
        running = time.monotonic() - created
        drivers = children(run.pid)
        driver_rss = max(kib(pid, "VmRSS") for pid in drivers) / 1024 if drivers else 0.0
        removed = time.monotonic()
        for index in range(size):
            await objects.delete(kube, "Pod", f"pod-{index}", NAMESPACE)

        async def all_gone() -> bool:
            return not await objects.list_objects(kube, "Pod", NAMESPACE)

        await until(all_gone, "pods deleted")
        deleted = time.monotonic() - removed
        peak = kib(run.pid, "VmHWM") / 1024
        kube.close()
    finally:
        if controlplane is not None:
            controlplane.terminate()
            await controlplane.wait()
        run.terminate()
        await run.wait()
        await reader
    first_pod = statistics.median(first_running.values())
    return FleetRun(size, registered, running, first_pod, deleted, peak, driver_rss)


async def main(sizes: list[int]) -> list[FleetRun]:
    results = []
    for size in sizes:
        workdir = Path(tempfile.mkdtemp(prefix="kd-nodes-", dir="/tmp"))
        try:
            results.append(await one_fleet(size, workdir))
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    return results


def per_node_mb(result: FleetRun, base: FleetRun) -> float:
    return (result.peak_rss_mb - base.peak_rss_mb) / (result.nodes - base.nodes)


def figures(results: list[FleetRun]) -> list[Figure]:
    base = min(results, key=lambda result: result.nodes)
    found = []
    for result in results:
        timing = f"registered {result.registered:.1f} s, own pod Running {result.first_pod:.1f} s"
        if result.nodes > base.nodes:
            extra = per_node_mb(result, base)
            name = f"run memory per extra node, {result.nodes} nodes"
            target = f"≤ {TARGET_MB_PER_NODE:g} MB"
            found.append(Figure("many nodes", name, f"{extra:.2f} MB", target, extra <= TARGET_MB_PER_NODE, timing))
        else:
            found.append(Figure("many nodes", f"{result.nodes} node(s)", f"{result.peak_rss_mb:.0f} MB", spread=timing))
    return found


def report(results: list[FleetRun]) -> Table:
    base = min(results, key=lambda result: result.nodes)
    table = Table(title="kubelet-dra run --nodes: one process, one reference driver process per node")
    for column in (
        "nodes",
        "all registered",
        "all Running",
        "own pod Running (median)",
        "all deleted",
        "run peak RSS",
        "per extra node",
        "driver RSS",
    ):
        table.add_column(column, justify="right")
    for result in results:
        extra = f"{per_node_mb(result, base):.2f} MB" if result.nodes > base.nodes else "-"
        table.add_row(
            str(result.nodes),
            f"{result.registered:.1f} s",
            f"{result.running:.1f} s",
            f"{result.first_pod:.1f} s",
            f"{result.deleted:.1f} s",
            f"{result.peak_rss_mb:.0f} MB",
            extra,
            f"{result.driver_rss_mb:.0f} MB",
        )
    table.caption = f"target: at most {TARGET_MB_PER_NODE:g} MB of run memory per additional node"
    return table


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1,10,50", help="fleet sizes, comma-separated (default: %(default)s)")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    arguments = parser.parse_args()
    fleet_sizes = sorted({int(size) for size in arguments.nodes.split(",")})
    started_load = load()
    fleets = asyncio.run(main(fleet_sizes))
    if arguments.output == "json":
        write_json({"loadAtStart": started_load, "fleets": [attrs.asdict(f) for f in fleets]}, figures(fleets))
    else:
        Console(width=140).print(report(fleets))
