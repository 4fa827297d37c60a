"""Benchmark of many simulated DRA nodes on one machine: ``kubelet-dra run --nodes`` with reference drivers.

For each API server and fleet size N: one ``kubelet-dra run --nodes 'sim-{0..N-1}' --reference-driver
gpu.example.com --devices 1`` process (its reference drivers: one process per 500 nodes), against

- ``embedded``: the embedded API server, in the process of its own ``run --nodes`` starts for it, and
  the offline control plane (``kubelet-dra controlplane``, its own process) generating and allocating
  claims; pods are created bound to their node (there is no scheduler);
- ``real``: kube-apiserver 1.36 + etcd + kube-scheduler + kube-controller-manager of ``../shared/interop``,
  each node under its own identity (``system:node:<name>``: Node authorizer and NodeRestriction); pods
  are created unbound and the real scheduler places them, one per node (each node has one device).

Measured: the time from start until every Node is Ready and every node's ResourceSlice is published;
the memory (RSS) of every kubelet-dra process (``run``, the drivers, the embedded API server, the offline
control plane), in all and per node; their CPU over a quiet window once all are Ready (heartbeats, leases,
watches); then
one pod per node with a claim from a template: pods/s until all are Running, then after their deletion
pods/s until all are gone.

Targets (1,000 nodes, 2 cores): all Ready with slices in ≤ 120 s, ≤ 3 MB per node, steady state under
one core.

Run: ``python benchmarks/many_nodes.py [--nodes 10,100,1000] [--apiservers embedded,real] [--keep] [--output json]``
(``--keep``: the work dirs stay, with ``run.log`` and ``controlplane.log``, at ``-v`` of ``--verbosity``.)
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import attrs
from common import Figure, load, realk8s, write_json
from rich.console import Console
from rich.table import Table

from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.workbench.testbed import manifests, objects

DRIVER = "gpu.example.com"
TEMPLATE = "one-gpu"
NAMESPACE = objects.DEFAULT_NAMESPACE
TARGET_READY_SECONDS = 120.0
TARGET_MB_PER_NODE = 3.0
TARGET_CORES = 1.0
STEP_TIMEOUT = 900.0
POLL = 1.0
REQUESTS_AT_ONCE = 16
"""Pods created (and deleted) at the same time: one after the other, a loaded API server's answer took 0.2 s, so
a thousand pods took minutes to create and the figure measured the benchmark, not the nodes."""
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@attrs.frozen
class FleetRun:
    apiserver: str
    nodes: int
    ready: float
    """Seconds from start to every Node Ready and every node's ResourceSlice published."""
    rss_mb: float
    """Resident memory of every kubelet-dra process once all were Ready."""
    peak_mb: float
    """Sum of each kubelet-dra process's peak resident memory (VmHWM) at the end."""
    processes: int
    steady_cores: float
    """CPU of the kubelet-dra processes over the quiet window, in cores."""
    running: float
    gone: float
    least_ready: int
    """The fewest Nodes Ready at any look while the pods started and went: a node whose Lease or status went
    stale under the load shows here."""

    @property
    def mb_per_node(self) -> float:
        return self.rss_mb / self.nodes


def tree(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(child) for child in (task / "children").read_text().split()]
    return found


def status_kib(pid: int, field: str) -> int:
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    return 0


def cpu_seconds(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / CLOCK_TICKS


async def until(check: Callable[[], Awaitable[bool]], what: str, poll: float = POLL) -> None:
    deadline = time.monotonic() + STEP_TIMEOUT
    while not await check():
        if time.monotonic() > deadline:
            raise SystemExit(f"benchmark: {what} not within {STEP_TIMEOUT:g} s")
        await asyncio.sleep(poll)


async def ready_nodes(kube: KubeClient) -> int:
    nodes = await objects.list_objects(kube, "Node")
    return sum(
        any(c["type"] == "Ready" and c["status"] == "True" for c in (n.get("status") or {}).get("conditions") or [])
        for n in nodes
    )


async def ready_with_slices(kube: KubeClient, size: int) -> bool:
    """Slices first: the last to come, and a tenth of a Node's size, so the Nodes are listed only near the end."""
    pools = {item["spec"]["pool"]["name"] for item in await objects.list_objects(kube, "ResourceSlice")}
    return len(pools) >= size and await ready_nodes(kube) >= size


@attrs.frozen
class Cluster:
    """Where the fleet runs: the flags ``run`` gets, the admin kubeconfig, and a kubelet-dra control plane's pids."""

    name: str
    flags: tuple[str, ...]
    admin: Path
    bound: bool
    """Pods are created on their node (no scheduler)."""
    poll: float = POLL
    """Seconds between the benchmark's lists of every Node, slice and pod."""


@contextlib.asynccontextmanager
async def cluster(name: str, nodes: list[str], workdir: Path) -> AsyncIterator[Cluster]:
    if name == "embedded":
        admin = workdir / "kubeconfig"
        # No --sync-frequency: a pod is synced again when the control plane marks its claims reserved, and a thousand
        # pods resynced every half second keep the one process busy.
        flags = ("--kubeconfig-out", str(admin), "--pod-back-off-period", "0.5")
        # Lists of a thousand Nodes or pods are work for the Python server beside the nodes: one every 2 s.
        yield Cluster(name, flags, admin, True, poll=2.0)
        return
    interop = realk8s()
    if interop is None:
        raise SystemExit("many nodes: the real control plane needs ../shared/interop")
    plane_dir = workdir / "plane"
    plane = interop.start_control_plane(plane_dir, "scheduler", "controller-manager", nodes=tuple(nodes))
    try:
        # The kubelet's own pod sync periods: the scheduler binds a pod once its claim is allocated, so its first
        # prepare succeeds, and a thousand running pods resynced every 0.5 s would be 2,000 syncs a second.
        flags = ("--kubeconfig", str(plane.dir / "kubeconfig-node-{node}"))
        yield Cluster(name, flags, plane.kubeconfig, False)
    finally:
        interop.stop_control_plane(plane_dir)


async def one_fleet(apiserver: str, size: int, steady: float, workdir: Path, verbosity: int) -> FleetRun:
    names = [f"sim-{index}" for index in range(size)]
    async with cluster(apiserver, names, workdir) as where, contextlib.AsyncExitStack() as logs:
        start = time.monotonic()
        run = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "kubelet_dra", "run", "-v", str(verbosity), "--nodes", f"sim-{{0..{size - 1}}}"),
            *("--root-dir", str(workdir / "nodes"), "--reference-driver", DRIVER, "--devices", "1"),
            *where.flags,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=logs.enter_context((workdir / "run.log").open("wb")),
        )
        helpers: list[asyncio.subprocess.Process] = []
        kube: KubeClient | None = None
        try:

            async def api_up() -> bool:
                if run.returncode is not None:
                    raise SystemExit(f"benchmark: run exited with {run.returncode}")
                return where.admin.is_file()

            await until(api_up, "API server")
            kube = KubeClient.from_kubeconfig(str(where.admin), connections=REQUESTS_AT_ONCE)
            await until(lambda: ready_with_slices(kube, size), "all nodes Ready with slices", where.poll)
            ready = time.monotonic() - start
            if where.bound:
                controlplane = await asyncio.create_subprocess_exec(
                    *(sys.executable, "-m", "kubelet_dra", "controlplane", "-v", str(verbosity)),
                    *("--kubeconfig", str(where.admin)),
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=logs.enter_context((workdir / "controlplane.log").open("wb")),
                )
                helpers.append(controlplane)
            await asyncio.sleep(min(steady, 5.0))  # let the starts settle before the quiet window
            pids = tree(run.pid) + [helper.pid for helper in helpers]
            rss = sum(status_kib(pid, "VmRSS") for pid in pids) / 1024
            before, started = cpu_seconds(pids), time.monotonic()
            await asyncio.sleep(steady)
            cores = (cpu_seconds(pids) - before) / (time.monotonic() - started)

            await objects.apply(kube, manifests.device_class(DRIVER))
            await objects.apply(kube, manifests.claim_template(TEMPLATE, DRIVER))
            created = time.monotonic()

            async def create(name: str) -> None:
                pod = manifests.pod(f"pod-{name}", name, templates={"gpu": TEMPLATE})
                if not where.bound:  # the scheduler's to place
                    del pod["spec"]["nodeName"]
                await objects.apply(kube, pod)

            await at_once(names, create)
            least_ready = size

            async def all_running() -> bool:
                nonlocal least_ready
                least_ready = min(least_ready, await ready_nodes(kube))
                pods = await objects.list_objects(kube, "Pod", NAMESPACE)
                return sum((pod.get("status") or {}).get("phase") == "Running" for pod in pods) == size

            await until(all_running, "pods Running", where.poll)
            running = time.monotonic() - created
            removed = time.monotonic()
            await at_once(names, lambda name: objects.delete(kube, "Pod", f"pod-{name}", NAMESPACE))

            async def all_gone() -> bool:
                nonlocal least_ready
                least_ready = min(least_ready, await ready_nodes(kube))
                return not await objects.list_objects(kube, "Pod", NAMESPACE)

            await until(all_gone, "pods gone", where.poll)
            gone = time.monotonic() - removed
            pids = tree(run.pid) + [helper.pid for helper in helpers]
            peak = sum(status_kib(pid, "VmHWM") for pid in pids) / 1024
        finally:
            if kube is not None:
                kube.close()
            for process in (*helpers, run):
                if process.returncode is None:
                    process.terminate()
                await process.wait()
    return FleetRun(apiserver, size, ready, rss, peak, len(pids), cores, running, gone, least_ready)


async def at_once(names: list[str], action: Callable[[str], Awaitable[object]]) -> None:
    """``action`` for every name, ``REQUESTS_AT_ONCE`` at a time."""
    slots = asyncio.Semaphore(REQUESTS_AT_ONCE)

    async def one(name: str) -> None:
        async with slots:
            await action(name)

    await asyncio.gather(*(one(name) for name in names))


async def main(
    apiservers: list[str], sizes: list[int], steady: float, *, keep: bool = False, verbosity: int = 0
) -> list[FleetRun]:
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(REQUESTS_AT_ONCE, "kube-request"))
    results = []
    for apiserver in apiservers:
        for size in sizes:
            workdir = Path(tempfile.mkdtemp(prefix="kd-nodes-", dir="/tmp"))
            try:
                results.append(await one_fleet(apiserver, size, steady, workdir, verbosity))
            finally:
                if keep:
                    print(f"kept {workdir}", file=sys.stderr)
                else:
                    shutil.rmtree(workdir, ignore_errors=True)
    return results


def figures(results: list[FleetRun]) -> list[Figure]:
    found = []
    for r in results:
        where = f"{r.nodes} nodes, {r.apiserver} API server"
        found += [
            Figure(
                "many nodes",
                f"all Ready with slices, {where}",
                f"{r.ready:.1f} s",
                f"≤ {TARGET_READY_SECONDS:g} s",
                r.ready <= TARGET_READY_SECONDS,
            ),
            Figure(
                "many nodes",
                f"memory per node, {where}",
                f"{r.mb_per_node:.2f} MB",
                f"≤ {TARGET_MB_PER_NODE:g} MB",
                r.mb_per_node <= TARGET_MB_PER_NODE,
                f"{r.rss_mb:.0f} MB in {r.processes} processes, peaks {r.peak_mb:.0f} MB",
            ),
            Figure(
                "many nodes",
                f"steady-state CPU, {where}",
                f"{r.steady_cores:.2f} cores",
                f"< {TARGET_CORES:g} core",
                r.steady_cores < TARGET_CORES,
            ),
            Figure(
                "many nodes",
                f"pods to Running, {where}",
                f"{r.nodes / r.running:.1f} pods/s",
                spread=f"{r.running:.1f} s; gone {r.gone:.1f} s ({r.nodes / r.gone:.1f} pods/s)",
            ),
            Figure(
                "many nodes",
                f"nodes Ready during the pods, {where}",
                f"{r.least_ready} of {r.nodes}",
                f"{r.nodes}",
                r.least_ready == r.nodes,
            ),
        ]
    return found


def report(results: list[FleetRun]) -> Table:
    table = Table(title="kubelet-dra run --nodes with reference drivers (one driver process per 500 nodes)")
    columns = ("API server", "nodes", "all Ready + slices", "RSS, all processes", "per node", "steady CPU")
    for column in (*columns, "pods → Running", "pods → gone", "fewest Ready"):
        table.add_column(column, justify="right")
    for r in results:
        table.add_row(
            r.apiserver,
            str(r.nodes),
            f"{r.ready:.1f} s",
            f"{r.rss_mb:.0f} MB ({r.processes})",
            f"{r.mb_per_node:.2f} MB",
            f"{r.steady_cores:.2f} cores",
            f"{r.running:.1f} s, {r.nodes / r.running:.1f}/s",
            f"{r.gone:.1f} s, {r.nodes / r.gone:.1f}/s",
            str(r.least_ready),
        )
    table.caption = (
        f"targets at 1,000 nodes: Ready ≤ {TARGET_READY_SECONDS:g} s, ≤ {TARGET_MB_PER_NODE:g} MB per node,"
        f" steady < {TARGET_CORES:g} core"
    )
    return table


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="10,100,1000", help="fleet sizes, comma-separated (default: %(default)s)")
    parser.add_argument(
        "--apiservers",
        default=None,
        help="embedded, real (../shared/interop) or both, comma-separated (default: both where real can run)",
    )
    parser.add_argument(
        "--steady", type=float, default=20.0, help="seconds of the quiet window for CPU (default: %(default)s)"
    )
    parser.add_argument("--keep", action="store_true", help="keep each work dir with its logs")
    parser.add_argument("-v", "--verbosity", type=int, default=0, help="-v of run and the control plane's logs")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    arguments = parser.parse_args()
    chosen = arguments.apiservers or ("embedded,real" if realk8s() is not None else "embedded")
    fleet_sizes = sorted({int(size) for size in arguments.nodes.split(",")})
    started_load = load()
    fleets = asyncio.run(
        main(chosen.split(","), fleet_sizes, arguments.steady, keep=arguments.keep, verbosity=arguments.verbosity)
    )
    if arguments.output == "json":
        write_json({"loadAtStart": started_load, "fleets": [attrs.asdict(f) for f in fleets]}, figures(fleets))
    else:
        Console(width=160).print(report(fleets))
        Console().print(f"load at start {started_load}, at end {load()}")
