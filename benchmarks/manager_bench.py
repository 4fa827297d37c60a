"""Benchmark of the DRA manager's prepare and unprepare path, against real driver processes, beside a bare gRPC client.

For each API server (the embedded one, the real kube-apiserver of ``../shared/interop``, or any by
kubeconfig) and each driver (the reference driver with ``--no-op``, the real Go
``dra-example-kubeletplugin``, or any by command template), a ``Testbed`` node registers the driver
and a ``DRAManager`` of its own (checkpoint on) prepares and unprepares pods, as the kubelet's pod
workers do: pods with 1 and 4 claims, 1 and 16 pods at a time. Each claim is allocated its own
device and reserved for its pod; a pod cycles through prepare and unprepare. In the same run the
same ``NodePrepareResources``/``NodeUnprepareResources`` batches go to the same driver from a bare
``grpc.aio`` client (no API server read, no checkpoint, no call recorder): the ratio of the two is
kubelet-dra's own overhead. With the real kube-apiserver and the Go example driver, the real
kubelet 1.36.2's DRA manager (``dra-manager-harness``, ``real_manager.py``) prepares and unprepares
the same pod's same claims through the same driver, one pod at a time: its row is the judge. Runs
alternate bare, real kubelet and manager so load drifts hit all alike; each shape starts with one
untimed cycle of each.

Targets: overhead ≤ 1.2× the bare client; a cycle p50 and p99 at or below the real kubelet's in the
same run.

Run: ``python benchmarks/manager_bench.py [--cycles 50] [--runs 3] [--drivers noop,example]
[--apiservers embedded,real] [--output json] [--results FILE]``; the real kubelet's row needs
``--apiservers real`` and ``--drivers example``; ``--markdown RESULTS`` prints benchmarks/README.md's tables of a
results file.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import attrs
import grpc
from breakdown import Breakdown, recorded_calls, table, traced_calls
from common import add_results_arguments, interop_bin, load, print_markdown_and_exit, realk8s, save_results, write_json
from manager_results import CONCURRENCY, REAL_KUBELET, Result, Samples, figures, markdown, report, summarize
from real_manager import RealManager, timings
from rich.console import Console

from kubelet_dra.kubelet.cm.dra import Checkpoint, DRAManager
from kubelet_dra.kubelet.kubelet import NodeOptions
from kubelet_dra.peers.api import dra_v1_pb2
from kubelet_dra.peers.api.services import DRA_V1
from kubelet_dra.peers.controlplane.allocator import allocate
from kubelet_dra.peers.controlplane.sharing import Usage
from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.workbench.testbed import REFERENCE_DRIVER, DriverSpec, Testbed, TestbedOptions, manifests, objects

NODE = "bench-node"
CLAIMS = (1, 4)
DEVICES = max(CLAIMS) * max(CONCURRENCY)
CALL_TIMEOUT = 45.0
NO_RECONCILE = 1e9
"""The benchmark's pods exist only in memory: the node must never reconcile them away."""


@attrs.frozen
class Driver:
    label: str
    name: str
    command: str
    extra: tuple[str, ...] = ()


def drivers(names: Sequence[str], interop: Any) -> list[Driver]:
    known = {
        "noop": lambda: Driver(
            "reference --no-op", "gpu.example.com", REFERENCE_DRIVER, ("--no-op", "--devices", str(DEVICES))
        )
    }
    if interop is not None:
        command = interop.example_driver_cmd(interop_bin(interop), "gpu", f"--num-devices {DEVICES}")
        known["example"] = lambda: Driver("dra-example-kubeletplugin", "gpu.example.com", command)
    chosen = []
    for name in names:
        if name in known:
            chosen.append(known[name]())
        elif "=" in name:  # NAME=COMMAND TEMPLATE: any other driver
            driver_name, _, command = name.partition("=")
            chosen.append(Driver(driver_name, driver_name, command))
        else:
            raise SystemExit(f"benchmark: unknown driver {name!r} (noop, example with the interop programs, NAME=CMD)")
    return chosen


@contextlib.asynccontextmanager
async def apiserver(which: str, interop: Any) -> AsyncIterator[str | None]:
    """The kubeconfig of the API server to use (``None``: the testbed's embedded one)."""
    if which == "embedded":
        yield None
    elif which == "real":
        if interop is None:
            raise SystemExit("benchmark: the real kube-apiserver needs the interop programs (../shared/interop)")
        directory = Path(tempfile.mkdtemp(prefix="kd-cp-", dir="/tmp"))
        try:
            plane = await asyncio.to_thread(interop.start_control_plane, directory)
            yield str(plane.kubeconfig)
        finally:
            await asyncio.to_thread(interop.stop_control_plane, directory)
            shutil.rmtree(directory, ignore_errors=True)
    else:
        yield which


class Stage:
    """One node with one registered driver, and the allocated claims of the benchmark's pods."""

    def __init__(self, bed: Testbed, driver: Driver) -> None:
        self.bed = bed
        self.driver = driver

    async def slices(self, devices: int) -> list[dict[str, Any]]:
        selector = f"spec.nodeName={NODE},spec.driver={self.driver.name}"

        async def published() -> list[dict[str, Any]] | None:
            found = await objects.list_objects(self.bed.kube, "ResourceSlice", field_selector=selector)
            return found if sum(len(s["spec"].get("devices") or []) for s in found) >= devices else None

        return await self.bed.until(published, timeout=60, what=f"{devices} devices of {self.driver.name} published")

    async def pods(self, count: int, claims: int, *, in_api: bool = False) -> list[dict[str, Any]]:
        """``count`` pods with ``claims`` claims each, every claim allocated a device of its own and reserved.

        ``in_api``: the pods are created in the API server too (for the real kubelet's manager, which reads
        them there), bound to no node, so that no node runs them.
        """
        kube = self.bed.kube
        device_class = await objects.apply(kube, manifests.device_class(self.driver.name))
        slices = await self.slices(count * claims)
        usage = Usage()
        pods = []
        for index in range(count):
            uid, name = str(uuid.uuid4()), f"bench-{index}-{uuid.uuid4().hex[:6]}"
            names = {f"claim-{number}": f"{name}-{number}" for number in range(claims)}
            pod = manifests.pod(name, NODE, claims=names)
            if in_api:
                del pod["spec"]["nodeName"]
                uid = (await objects.apply(kube, pod))["metadata"]["uid"]
            pod["metadata"]["uid"] = uid
            for number in range(claims):
                claim = await objects.apply(kube, manifests.claim(names[f"claim-{number}"], self.driver.name))
                classes = {self.driver.name: device_class}
                allocation = allocate(claim, node=NODE, slices=slices, classes=classes, in_use=usage)
                status = {
                    "allocation": allocation.to_status(),
                    "reservedFor": [{"resource": "pods", "name": name, "uid": uid}],
                }
                usage.add({"status": status})
                await objects.write_status(kube, claim, status)
            pods.append(pod)
        return pods

    async def forget(self, pods: Sequence[dict[str, Any]]) -> None:
        for pod in pods:
            await objects.delete(self.bed.kube, "Pod", pod["metadata"]["name"], objects.DEFAULT_NAMESPACE, grace=0)
            for entry in pod["spec"]["resourceClaims"]:
                name = entry["resourceClaimName"]
                await objects.delete(self.bed.kube, "ResourceClaim", name, objects.DEFAULT_NAMESPACE)


Step = Callable[[dict[str, Any]], Awaitable[object]]


async def cycles(pods: Sequence[dict[str, Any]], rounds: int, prepare: Step, unprepare: Step) -> Samples:
    """Every pod prepared and unprepared ``rounds`` times, all pods at once."""
    prepared: list[float] = []
    unprepared: list[float] = []

    async def worker(pod: dict[str, Any]) -> None:
        for _ in range(rounds):
            started = time.perf_counter()
            await prepare(pod)
            middle = time.perf_counter()
            await unprepare(pod)
            prepared.append(middle - started)
            unprepared.append(time.perf_counter() - middle)

    started = time.perf_counter()
    await asyncio.gather(*(worker(pod) for pod in pods))
    return Samples(prepared, unprepared, time.perf_counter() - started)


class BareClient:
    """The driver's DRA v1 service straight from ``grpc.aio``: what the calls alone cost."""

    def __init__(self, endpoint: str) -> None:
        self._channel = grpc.aio.insecure_channel(f"unix:{endpoint}")
        self._stub = DRA_V1.stub(self._channel)
        self.batches: dict[str, list[dra_v1_pb2.Claim]] = {}
        """Pod UID → the claims the manager sends for it (one driver: all of them)."""

    async def learn(self, kube: KubeClient, pod: dict[str, Any]) -> None:
        """Read the pod's claims once, outside the timed calls."""
        refs = []
        for entry in pod["spec"]["resourceClaims"]:
            claim = await objects.get(kube, "ResourceClaim", entry["resourceClaimName"], objects.DEFAULT_NAMESPACE)
            assert claim is not None
            meta = claim["metadata"]
            refs.append(dra_v1_pb2.Claim(namespace=meta["namespace"], uid=meta["uid"], name=meta["name"]))
        self.batches[pod["metadata"]["uid"]] = refs

    async def prepare(self, pod: dict[str, Any]) -> None:
        request = dra_v1_pb2.NodePrepareResourcesRequest(claims=self.batches[pod["metadata"]["uid"]])
        await self._stub.NodePrepareResources(request, timeout=CALL_TIMEOUT)

    async def unprepare(self, pod: dict[str, Any]) -> None:
        request = dra_v1_pb2.NodeUnprepareResourcesRequest(claims=self.batches[pod["metadata"]["uid"]])
        await self._stub.NodeUnprepareResources(request, timeout=CALL_TIMEOUT)

    async def close(self) -> None:
        await self._channel.close()


def real_manager(bed: Testbed, which: str, kubeconfig: str | None, driver: Driver, interop: Any) -> RealManager | None:
    """The real kubelet's DRA manager beside ours: with the real kube-apiserver and the Go example driver."""
    if interop is None or which != "real" or kubeconfig is None or driver.label != "dra-example-kubeletplugin":
        return None
    binary = interop_bin(interop) / "dra-manager-harness"
    return RealManager(
        binary, registry_dir=bed.registry_dir, state_dir=bed.workdir / "real-state", node=NODE, kubeconfig=kubeconfig
    )


async def one_driver(
    which: str, kubeconfig: str | None, driver: Driver, rounds: int, runs: int, interop: Any
) -> list[Result]:
    options = TestbedOptions(
        node_name=NODE, kubeconfig=kubeconfig, control_plane=False, node=NodeOptions(reconcile_period=NO_RECONCILE)
    )
    results = []
    async with Testbed(options) as bed:
        await bed.add_driver(DriverSpec(driver.name, driver.command, driver.extra, label="bench"), wait=60)
        stage = Stage(bed, driver)
        manager = DRAManager(bed.node, Checkpoint(bed.workdir / "bench-state"))
        bare = BareClient(bed.node.plugins.get_plugin(driver.name).endpoint)
        real = real_manager(bed, which, kubeconfig, driver, interop)
        try:
            for claims in CLAIMS:
                for concurrency in CONCURRENCY:
                    judged = real is not None and concurrency == 1
                    pods = await stage.pods(concurrency, claims, in_api=judged)
                    for pod in pods:
                        await bare.learn(bed.kube, pod)
                    per_pod = rounds if concurrency == 1 else max(rounds // 4, 3)
                    steps = [(bare.prepare, bare.unprepare), (manager.prepare_resources, manager.unprepare_resources)]
                    for prepare, unprepare in steps:  # warm-up, untimed (the harness drops its first cycle)
                        await cycles(pods, 1, prepare, unprepare)
                    bare_runs, real_runs, manager_runs = [], [], []
                    for _ in range(runs):
                        bare_runs.append(await cycles(pods, per_pod, *steps[0]))
                        if judged and real is not None:
                            meta = pods[0]["metadata"]
                            real_runs.append(
                                Samples(*await real.cycles(f"{meta['namespace']}/{meta['name']}", driver.name, per_pod))
                            )
                        manager_runs.append(await cycles(pods, per_pod, *steps[1]))
                    result = summarize(which, driver.label, claims, concurrency, bare_runs, manager_runs, real_runs)
                    if judged and real is not None and claims == 1:
                        parts = await split(bed, real, manager, pods[0], driver.name, per_pod)
                        result = attrs.evolve(result, breakdown=parts)
                    results.append(result)
                    await stage.forget(pods)
        finally:
            await bare.close()
    return results


async def split(
    bed: Testbed, real: RealManager, manager: DRAManager, pod: dict[str, Any], driver: str, rounds: int
) -> tuple[Breakdown, ...]:
    """One more run of each manager, untimed in the main figures, split into the driver calls and the rest."""
    meta = pod["metadata"]
    output, trace = await real.run(f"{meta['namespace']}/{meta['name']}", driver, rounds, "-trace")
    prepare_calls, unprepare_calls = traced_calls(trace)
    theirs = Breakdown.of(REAL_KUBELET, timings(output), (prepare_calls[1:], unprepare_calls[1:]))
    since = time.time()
    run = await cycles([pod], rounds, manager.prepare_resources, manager.unprepare_resources)
    records = [record for record in bed.calls() if record.started_at >= since]
    return theirs, Breakdown.of("kubelet-dra", (run.prepare, run.unprepare), recorded_calls(records))


async def main(arguments: argparse.Namespace) -> list[Result]:
    interop = realk8s()
    results = []
    for which in arguments.apiservers.split(","):
        async with apiserver(which, interop) as kubeconfig:
            for driver in drivers(arguments.drivers.split(","), interop):
                results += await one_driver(which, kubeconfig, driver, arguments.cycles, arguments.runs, interop)
    return results


def default_list(real: str, fallback: str) -> str:
    return real if realk8s() is not None else fallback


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=50, help="cycles per pod, 1 pod at once (default: %(default)s)")
    parser.add_argument(
        "--runs", type=int, default=3, help="alternating bare/real kubelet/manager runs (default: %(default)s)"
    )
    parser.add_argument(
        "--drivers",
        default=default_list("noop,example", "noop"),
        help="noop, example (the interop programs' Go driver) or NAME=COMMAND-TEMPLATE (default: %(default)s)",
    )
    parser.add_argument(
        "--apiservers",
        default=default_list("embedded,real", "embedded"),
        help="embedded, real (interop kube-apiserver) or a kubeconfig path (default: %(default)s)",
    )
    parser.add_argument("--output", choices=("text", "json"), default="text")
    add_results_arguments(parser)
    args = parser.parse_args()
    print_markdown_and_exit(args, markdown)
    started_load = load()
    found = asyncio.run(main(args))
    settings = {name: getattr(args, name) for name in ("cycles", "runs", "drivers", "apiservers")}
    document = {**settings, "results": [attrs.asdict(r) for r in found]}
    save_results(args.results, "manager_bench.py", document, figures(found), started_load)
    if args.output == "json":
        write_json({"loadAtStart": started_load, "results": [attrs.asdict(r) for r in found]}, figures(found))
    else:
        console = Console(width=160)
        console.print(report(found))
        if split_rows := [row for result in found for row in result.breakdown]:
            console.print(table(split_rows))
        console.print(f"load at start {started_load}, at end {load()}")
