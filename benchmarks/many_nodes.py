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
each process's memory (RSS once all are Ready, its peak at the end) and CPU seconds from start to all Ready,
over a quiet window once all are Ready (heartbeats, Leases, watches) and while one pod per node with a claim
from a template starts and goes (pods/s until all are Running, then after their deletion until all are gone);
the seconds ``run`` takes to stop. The processes are kubelet-dra's (``run``, its drivers, the embedded API
server, the offline control plane) and the real control plane's programs. Targets and tables:
``many_nodes_report.py``. The results file is what benchmarks/README.md's tables are generated from::

    python benchmarks/many_nodes.py --nodes 10,1000 --apiservers real,embedded --steady 20 \\
        --results benchmarks/results/many_nodes.json
    python benchmarks/many_nodes.py --markdown benchmarks/results/many_nodes.json   # the README's tables

``--keep``: the work dirs stay, with ``run.log`` and ``controlplane.log``, at ``-v`` of ``--verbosity``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import attrs
from common import interop_bin, load, print_markdown_and_exit, provenance, realk8s, status_mb, write_json, write_results
from many_nodes_report import PHASES, figures, markdown

from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.workbench.testbed import manifests, objects

DRIVER = "gpu.example.com"
TEMPLATE = "one-gpu"
NAMESPACE = objects.DEFAULT_NAMESPACE
STEP_TIMEOUT = 900.0
POLL = 1.0
SETTLE = 5.0
"""Seconds at most between all Ready and the quiet window, for the starts to settle."""
REQUESTS_AT_ONCE = 16
"""Pods created (and deleted) at the same time: one after the other, a loaded API server's answer took 0.2 s, so
a thousand pods took minutes to create and the figure measured the benchmark, not the nodes."""
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
REAL_PROGRAMS = ("etcd", "apiserver", "scheduler", "controller-manager")
"""The real control plane's pid files (``DIR/NAME.pid``, as ``start-control-plane`` writes them): etcd, kube-NAME."""
PHASE_MARKS = {"start": ("begin", "ready"), "steady": ("quiet", "quiet end"), "pods": ("pods", "gone")}
"""Each phase of ``PHASES`` between two of the looks at every process's CPU seconds."""


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


def cpu_seconds(pid: int) -> float:
    """A process's user and system CPU seconds so far (0 once it is gone)."""
    with contextlib.suppress(OSError):
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime
    return 0.0


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


def role(pid: int) -> str:
    """The kubelet-dra command a process runs (``run``, ``driver``, ``apiserver``, ``controlplane``)."""
    with contextlib.suppress(OSError):
        words = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        for index, word in enumerate(words[:-1]):
            if word == "kubelet_dra" or word.endswith("kubelet_dra/__main__.py"):
                return words[index + 1]
    return "other"


@attrs.define
class Watch:
    """The processes measured: kubelet-dra's (every process below ``roots``) and the real control plane's programs
    (``others``, by name); every process's CPU seconds at each mark between the phases."""

    others: dict[int, str]
    roots: list[int] = attrs.Factory(list)
    marks: dict[str, dict[int, float]] = attrs.Factory(dict)

    def roles(self) -> dict[int, tuple[str, bool]]:
        """Each process's role, and whether it is kubelet-dra's."""
        found = {pid: (role(pid), True) for root in self.roots for pid in tree(root)}
        return found | {pid: (name, False) for pid, name in self.others.items()}

    def mark(self, name: str) -> None:
        self.marks[name] = {pid: cpu_seconds(pid) for pid in self.roles()}

    def processes(self, rest: dict[int, float], peak: dict[int, float]) -> dict[str, dict[str, Any]]:
        """Each role's processes, resident memory at rest, peaks and CPU seconds by phase, summed: ``run`` first."""
        found: dict[str, dict[str, Any]] = {}
        for pid, (name, ours) in self.roles().items():
            entry = found.setdefault(
                name, {"ours": ours, "count": 0, "rss_mb": 0.0, "peak_mb": 0.0, "cpu_s": dict.fromkeys(PHASES, 0.0)}
            )
            entry["count"] += 1
            entry["rss_mb"] = round(entry["rss_mb"] + rest.get(pid, 0.0), 1)
            entry["peak_mb"] = round(entry["peak_mb"] + peak.get(pid, 0.0), 1)
            for phase, (begin, end) in PHASE_MARKS.items():
                spent = self.marks[end].get(pid, 0.0) - self.marks[begin].get(pid, 0.0)
                entry["cpu_s"][phase] = round(entry["cpu_s"][phase] + spent, 2)
        return dict(sorted(found.items(), key=lambda item: (not item[1]["ours"], item[0] != "run", item[0])))

    def memory_mb(self, field: str) -> dict[int, float]:
        """``VmRSS`` or ``VmHWM`` of every process, in MB."""
        return {pid: status_mb(pid, field) for pid in self.roles()}


@attrs.frozen
class Cluster:
    """Where the fleet runs: the flags ``run`` gets, the admin kubeconfig, and the real control plane's programs."""

    name: str
    flags: tuple[str, ...]
    admin: Path
    bound: bool
    """Pods are created on their node (no scheduler)."""
    poll: float = POLL
    """Seconds between the benchmark's lists of every Node, slice and pod."""
    programs: dict[int, str] = attrs.Factory(dict)
    """The real control plane's processes, by pid: their memory and CPU are measured beside kubelet-dra's."""


@contextlib.asynccontextmanager
async def cluster(name: str, nodes: list[str], workdir: Path) -> AsyncIterator[Cluster]:
    if name == "embedded":
        admin = workdir / "kubeconfig"
        # No --sync-frequency: a pod is synced again when the control plane marks its claims reserved, and a thousand
        # pods resynced every half second keep the one process busy.
        flags: tuple[str, ...] = ("--kubeconfig-out", str(admin), "--pod-back-off-period", "0.5")
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
        pids = {int((plane.dir / f"{name}.pid").read_text()): name for name in REAL_PROGRAMS}
        programs = {pid: name if name == "etcd" else f"kube-{name}" for pid, name in pids.items()}
        yield Cluster(name, flags, plane.kubeconfig, False, programs=programs)
    finally:
        interop.stop_control_plane(plane_dir)


async def one_fleet(apiserver: str, size: int, steady: float, workdir: Path, verbosity: int) -> dict[str, Any]:
    """One fleet's figures, as the results file keeps them (``many_nodes_report`` derives the totals)."""
    names = [f"sim-{index}" for index in range(size)]
    async with cluster(apiserver, names, workdir) as where, contextlib.AsyncExitStack() as logs:
        watch, loads = Watch(where.programs), {"start": load()}
        watch.mark("begin")
        start = time.monotonic()
        run = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "kubelet_dra", "run", "-v", str(verbosity), "--nodes", f"sim-{{0..{size - 1}}}"),
            *("--root-dir", str(workdir / "nodes"), "--reference-driver", DRIVER, "--devices", "1"),
            *where.flags,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=logs.enter_context((workdir / "run.log").open("wb")),
        )
        watch.roots.append(run.pid)
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
            watch.mark("ready")
            loads["ready"] = load()
            if where.bound:
                controlplane = await asyncio.create_subprocess_exec(
                    *(sys.executable, "-m", "kubelet_dra", "controlplane", "-v", str(verbosity)),
                    *("--kubeconfig", str(where.admin)),
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=logs.enter_context((workdir / "controlplane.log").open("wb")),
                )
                helpers.append(controlplane)
                watch.roots.append(controlplane.pid)
            await asyncio.sleep(min(steady, SETTLE))
            rest = watch.memory_mb("VmRSS")
            watch.mark("quiet")
            quiet = time.monotonic()
            await asyncio.sleep(steady)
            watch.mark("quiet end")
            steady_s = time.monotonic() - quiet

            watch.mark("pods")
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
            watch.mark("gone")
            processes = watch.processes(rest, watch.memory_mb("VmHWM"))
            loads["end"] = load()
            stop_s = [await stop(process) for process in (*helpers, run)][-1]
        finally:
            if kube is not None:
                kube.close()
            for process in (*helpers, run):
                await stop(process)
    return {
        "apiserver": apiserver,
        "nodes": size,
        "ready_s": round(ready, 1),
        "steady_s": round(steady_s, 2),
        "running_s": round(running, 1),
        "gone_s": round(gone, 1),
        "stop_s": round(stop_s, 1),
        "least_ready": least_ready,
        "load": loads,
        "processes": processes,
    }


async def stop(process: asyncio.subprocess.Process) -> float:
    """Seconds from SIGTERM to the process's exit (``run``'s: every node and its driver processes stopped)."""
    started = time.monotonic()
    if process.returncode is None:
        process.terminate()
    await process.wait()
    return time.monotonic() - started


async def at_once(names: list[str], action: Callable[[str], Awaitable[object]]) -> None:
    """``action`` for every name, ``REQUESTS_AT_ONCE`` at a time."""
    slots = asyncio.Semaphore(REQUESTS_AT_ONCE)

    async def one(name: str) -> None:
        async with slots:
            await action(name)

    await asyncio.gather(*(one(name) for name in names))


async def main(
    apiservers: list[str], sizes: list[int], steady: float, *, keep: bool = False, verbosity: int = 0
) -> list[dict[str, Any]]:
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


def kubernetes_version() -> str:
    """The real control plane's release, as its kube-apiserver names it."""
    interop = realk8s()
    assert interop is not None, "the real control plane ran"
    program = interop_bin(interop) / "kube-apiserver"
    return subprocess.run([str(program), "--version"], capture_output=True, text=True, check=True).stdout.split()[-1]


def command_line() -> int:
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
    parser.add_argument("--results", type=Path, help="write the results file here")
    parser.add_argument("--markdown", type=Path, metavar="RESULTS", help="print the README's tables of RESULTS")
    parser.add_argument("--output", choices=("text", "json"), default="text")
    arguments = parser.parse_args()
    print_markdown_and_exit(arguments, markdown)
    chosen = (arguments.apiservers or ("embedded,real" if realk8s() is not None else "embedded")).split(",")
    fleet_sizes = sorted({int(size) for size in arguments.nodes.split(",")})
    results: dict[str, Any] = provenance("many_nodes.py")
    if "real" in chosen:
        results["kubernetes"] = kubernetes_version()
    fleets = results["fleets"] = asyncio.run(
        main(chosen, fleet_sizes, arguments.steady, keep=arguments.keep, verbosity=arguments.verbosity)
    )
    write_results(arguments.results, results)
    if arguments.output == "json":
        write_json({"loadAtStart": fleets[0]["load"]["start"], "fleets": fleets}, figures(fleets))
    else:
        sys.stdout.write(markdown(results))
    return 0


if __name__ == "__main__":
    sys.exit(command_line())
