"""A pod's whole path on a real control plane, on the real kubelet and on kubelet-dra, side by side.

One real control plane (kube-apiserver, etcd, kube-scheduler, kube-controller-manager 1.36.2 of
``../shared/interop``) with two nodes: the real kubelet 1.36.2 on the fake container runtime
(``start-kubelet``, under the machine-wide real-kubelet lock) and ``kubelet-dra run``, each with its own
Go example driver (QPS 1000). Pods whose claim comes from a ResourceClaimTemplate are created with a
node selector, one at a time, alternating between the two nodes: the real scheduler allocates a device
and binds the pod, the node prepares the claim and reports the pod Running; then the pod is deleted
(default grace period) and the node unprepares and finishes the deletion. Times are taken as a user
sees them, from the API: create → phase Running, delete → the pod gone (polled every 10 ms).

Run: ``python benchmarks/pod_path.py [--pods 5] [--output json] [--results FILE]`` (needs root and the interop
programs); ``--markdown RESULTS`` prints benchmarks/README.md's table of a results file.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import attrs
from common import (
    Figure,
    Percentiles,
    add_results_arguments,
    load,
    print_markdown_and_exit,
    realk8s,
    save_results,
    spread,
    write_json,
)
from rich.console import Console
from rich.table import Table

from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path
from kubelet_dra.workbench.testbed import manifests

REAL, SIMULATED = "real-1", "sim-1"
LABELS = {REAL: "real kubelet 1.36.2 + fake-cri", SIMULATED: "kubelet-dra run"}
DRIVER = "gpu.example.com"
POLL = 0.01
TIMEOUT = 90.0
PODS = api_path("", "v1", "pods", namespace="default")


@attrs.frozen
class NodePath:
    """One node's figures: seconds from create to Running and from delete to gone, per pod."""

    node: str
    running: list[float]
    gone: list[float]


def objects_of_the_pods() -> list[dict[str, Any]]:
    """The DeviceClass and the claim template every pod of the run claims from."""
    return [manifests.device_class(DRIVER), manifests.claim_template("one-gpu", DRIVER, requests=("gpu",))]


def pod(name: str, node: str) -> dict[str, Any]:
    """A pod the real scheduler places on ``node`` (by its hostname label), with a claim from the template."""
    manifest = manifests.pod(name, "", templates={"gpu": "one-gpu"}, containers=("c",))
    del manifest["spec"]["nodeName"]
    manifest["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
    return manifest


def example_driver(bin_dir: Path, node: str, kubeconfig: Path, dirs: dict[str, Path]) -> list[str]:
    return [
        str(bin_dir / "dra-example-kubeletplugin"),
        *("--node-name", node, "--kubeconfig", str(kubeconfig)),
        *("--kubelet-registrar-directory-path", str(dirs["registry"])),
        *("--kubelet-plugins-directory-path", str(dirs["plugins"]), "--cdi-root", str(dirs["cdi"])),
        *("--device-profile", "gpu", "--kube-api-qps", "1000", "--kube-api-burst", "1000"),
    ]


async def until(check: Any, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not await check():
        if time.monotonic() > deadline:
            raise SystemExit(f"pod path: {what} did not happen within {TIMEOUT:g} s")
        await asyncio.sleep(POLL)


async def one_pod(kube: KubeClient, node: str) -> tuple[float, float]:
    """Seconds from create to Running and from delete to gone, of one pod on ``node``."""
    name = f"path-{uuid.uuid4().hex[:8]}"
    path = api_path("", "v1", "pods", namespace="default", name=name)

    async def phase() -> str:
        return str(((await kube.request("GET", path)).get("status") or {}).get("phase", ""))

    async def gone() -> bool:
        try:
            await kube.request("GET", path)
        except KubeApiError as err:
            if err.not_found:
                return True
            raise
        return False

    started = time.perf_counter()
    await kube.request("POST", PODS, body=pod(name, node))
    await until(lambda: _equals(phase(), "Running"), f"pod {name} Running on {node}")
    running = time.perf_counter() - started
    started = time.perf_counter()
    await kube.request("DELETE", path)
    await until(gone, f"pod {name} gone from {node}")
    return running, time.perf_counter() - started


async def _equals(value: Any, expected: str) -> bool:
    return await value == expected


async def published(kube: KubeClient, node: str) -> bool:
    query = {"fieldSelector": f"spec.nodeName={node},spec.driver={DRIVER}"}
    return bool((await kube.request("GET", api_path("resource.k8s.io", "v1", "resourceslices"), query=query))["items"])


async def measure(plane: Any, kubelet: Any, bin_dir: Path, workdir: Path, pods: int) -> list[NodePath]:
    kube = KubeClient.from_kubeconfig(str(plane.kubeconfig))
    sim_dirs = {name: workdir / name for name in ("registry", "plugins", "cdi")}
    real_dirs = {"registry": kubelet.registry_dir, "plugins": kubelet.plugins_dir, "cdi": workdir / "real-cdi"}
    for directory in [*sim_dirs.values(), real_dirs["cdi"]]:
        directory.mkdir(parents=True, exist_ok=True)
    logs = (workdir / "processes.log").open("w")
    node_args = ("run", "--node-name", SIMULATED, "--registry-dir", str(sim_dirs["registry"]))
    processes = [
        subprocess.Popen(
            [
                *(sys.executable, "-m", "kubelet_dra", *node_args),
                *("--kubeconfig", str(plane.node_kubeconfig(SIMULATED)), "--state-dir", str(workdir / "state")),
                *("--pod-back-off-period", "0.5"),
            ],
            stdout=logs,
            stderr=subprocess.STDOUT,
        ),
        subprocess.Popen(example_driver(bin_dir, SIMULATED, plane.kubeconfig, sim_dirs), stdout=logs, stderr=logs),
        subprocess.Popen(example_driver(bin_dir, REAL, plane.kubeconfig, real_dirs), stdout=logs, stderr=logs),
    ]
    try:
        for node in (REAL, SIMULATED):
            await until(lambda node=node: published(kube, node), f"the example driver's slices of {node}")
        for manifest in objects_of_the_pods():
            group = manifest["apiVersion"].partition("/")[0]
            plural = {"DeviceClass": "deviceclasses", "ResourceClaimTemplate": "resourceclaimtemplates"}[
                manifest["kind"]
            ]
            namespace = manifest["metadata"].get("namespace")
            await kube.request("POST", api_path(group, "v1", plural, namespace=namespace), body=manifest)
        for node in (REAL, SIMULATED):  # warm-up: the first pod of each node is not counted
            await one_pod(kube, node)
        found = {node: ([], []) for node in (REAL, SIMULATED)}
        for _ in range(pods):
            for node in (REAL, SIMULATED):
                running, gone = await one_pod(kube, node)
                found[node][0].append(running)
                found[node][1].append(gone)
        return [NodePath(node, *found[node]) for node in (REAL, SIMULATED)]
    finally:
        for process in reversed(processes):
            process.terminate()
            process.wait(timeout=30)
        logs.close()
        kube.close()


def run(pods: int) -> list[NodePath]:
    interop = realk8s()
    if interop is None or (reason := interop.real_kubelet_missing()) is not None:
        raise SystemExit(f"pod path: needs the real kubelet ({reason if interop else 'no interop programs'})")
    bin_dir = Path(
        subprocess.run([str(interop.INTEROP_DIR / "unpack")], capture_output=True, text=True, check=True).stdout.strip()
    )
    workdir = Path(tempfile.mkdtemp(prefix="kd-path-", dir="/tmp"))
    plane_dir = workdir / "plane"
    try:
        plane = interop.start_control_plane(plane_dir, "scheduler", "controller-manager", nodes=(REAL, SIMULATED))
        try:
            with interop.real_kubelet(plane, REAL) as kubelet:
                return asyncio.run(measure(plane, kubelet, bin_dir, workdir, pods))
        finally:
            interop.stop_control_plane(plane_dir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def report(paths: list[NodePath]) -> Table:
    table = Table(title="A pod's whole path on a real control plane (ms: p50 / p95 / p99; min – max)")
    for column in ("node", "pods", "create → Running", "", "delete → gone", ""):
        table.add_column(column, justify="right")
    for path in paths:
        running, gone = Percentiles.of(path.running), Percentiles.of(path.gone)
        table.add_row(
            LABELS[path.node], str(len(path.running)), running.ms(), spread(path.running), gone.ms(), spread(path.gone)
        )
    table.caption = "same control plane, scheduler, Go example driver; pods alternate between the nodes"
    return table


def figures(paths: list[NodePath]) -> list[Figure]:
    found = []
    for path in paths:
        for what, values in (("create → Running", path.running), ("delete → gone", path.gone)):
            found.append(
                Figure(
                    "pod path",
                    f"{what}, {LABELS[path.node]}, p50",
                    f"{Percentiles.of(values).p50 * 1e3:.0f} ms",
                    spread=f"min – max {spread(values)}",
                )
            )
    return found


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pods", type=int, default=5, help="pods per node, after one warm-up each (default: %(default)s)"
    )
    parser.add_argument("--output", choices=("text", "json"), default="text")
    add_results_arguments(parser)
    args = parser.parse_args()
    print_markdown_and_exit(args)
    started_load = load()
    measured = run(args.pods)
    save_results(args.results, "pod_path.py", {"pods": args.pods}, figures(measured), started_load)
    if args.output == "json":
        write_json({"loadAtStart": started_load, "paths": [attrs.asdict(p) for p in measured]}, figures(measured))
    else:
        console = Console(width=140)
        console.print(report(measured))
        console.print(f"load at start {started_load}, at end {load()}")
