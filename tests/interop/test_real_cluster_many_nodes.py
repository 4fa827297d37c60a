"""Ten simulated nodes in one ``kubelet-dra run --nodes`` process join a real control plane, each node with its
own real Go example driver; the real kube-scheduler spreads ten pods across them.

Each driver publishes one GPU, so the scheduler can place each pod only on a node whose GPU is still
free: ten pods Running on ten different nodes proves every node's slices, allocation, prepare and
status went through. On deletion every node unprepares and the real controller manager deletes the
generated claims.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import eventually
from realk8s import RealControlPlane, client_go_refusals, example_driver_cmd, start_control_plane, stop_control_plane

NODES = [f"sim-{index}" for index in range(10)]
DRIVER = "gpu.example.com"


@pytest.fixture(scope="module")
def cluster(interop_bin: Path) -> Iterator[RealControlPlane]:
    directory = Path(tempfile.mkdtemp(prefix="kd-fleet-", dir="/tmp"))
    plane = start_control_plane(directory, "scheduler", "controller-manager")
    try:
        yield plane
    finally:
        stop_control_plane(directory)
        shutil.rmtree(directory, ignore_errors=True)


def manifests(pods: int) -> list[dict[str, Any]]:
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DRIVER},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
    }
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}},
    }
    return [device_class, template] + [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"gpu-pod-{index}", "namespace": "default", "labels": {"app": "fleet"}},
            "spec": {
                "containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
            },
        }
        for index in range(pods)
    ]


async def kubectl(plane: RealControlPlane, *args: str, stdin: str = "") -> str:
    process = await asyncio.create_subprocess_exec(
        *("kubectl", "--kubeconfig", str(plane.kubeconfig), *args),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(stdin.encode()), 60)
    assert process.returncode == 0, f"kubectl {' '.join(args)}: {err.decode()}"
    return out.decode()


async def items(plane: RealControlPlane, kind: str) -> list[dict[str, Any]]:
    return json.loads(await kubectl(plane, "get", kind, "-n", "default", "-o", "json"))["items"]


async def test_the_real_scheduler_spreads_pods_across_ten_nodes_of_one_process(
    cluster: RealControlPlane, interop_bin: Path
) -> None:
    root = Path(tempfile.mkdtemp(prefix="kd-", dir="/tmp"))
    run = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "kubelet_dra", "run", "--nodes", "sim-{0..9}", "--root-dir", str(root)),
        *("--kubeconfig", str(cluster.kubeconfig), "--pod-retry-period", "0.5", "--driver-name", DRIVER),
        *("--driver-cmd", example_driver_cmd(interop_bin, "gpu", "--num-devices 1")),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out: list[str] = []
    err: list[str] = []

    async def read(stream: asyncio.StreamReader | None, lines: list[str]) -> None:
        assert stream is not None
        async for raw in stream:
            lines.append(raw.decode().rstrip("\n"))

    readers = [asyncio.create_task(read(run.stdout, out)), asyncio.create_task(read(run.stderr, err))]
    try:
        registered = await eventually(lambda: any("10 with a driver registered" in line for line in out), timeout=120)
        assert registered, out
        await kubectl(
            cluster, "apply", "-f", "-", stdin=json.dumps({"kind": "List", "apiVersion": "v1", "items": manifests(10)})
        )

        async def placements() -> dict[str, str]:
            return {
                pod["metadata"]["name"]: pod["spec"].get("nodeName", "")
                for pod in await items(cluster, "pods")
                if (pod.get("status") or {}).get("phase") == "Running"
            }

        async def all_running() -> bool:
            return len(await placements()) == len(NODES)

        assert await eventually(all_running, timeout=180, interval=1), await kubectl(
            cluster, "get", "pods", "-o", "wide"
        )
        assert sorted((await placements()).values()) == sorted(NODES), "one pod on each node, by the real scheduler"
        for claim in await items(cluster, "resourceclaims"):
            [result] = claim["status"]["allocation"]["devices"]["results"]
            assert result["driver"] == DRIVER and result["pool"] in NODES
        assert await eventually(lambda: any("10 pods running, 10 claims prepared" in line for line in out), timeout=10)

        await kubectl(cluster, "delete", "pods", "-l", "app=fleet", "--wait=false")

        async def all_gone() -> bool:
            return not await items(cluster, "pods") and not await items(cluster, "resourceclaims")

        assert await eventually(all_gone, timeout=120, interval=1), "pods finished by their nodes, claims collected"
        assert await eventually(lambda: any("0 pods running, 0 claims prepared" in line for line in out), timeout=10)
        for node in NODES:
            assert not list((root / node / "cdi").glob("*claim*")), f"{node}'s driver kept a claim's CDI spec"
    finally:
        if run.returncode is None:
            run.terminate()
        await asyncio.wait_for(run.wait(), 60)
        await asyncio.gather(*readers)
        logs = {
            node: (root / node / "driver.log").read_text() for node in NODES if (root / node / "driver.log").exists()
        }
        shutil.rmtree(root, ignore_errors=True)
    assert run.returncode == 0
    assert not any("Traceback" in line for line in err), err[-40:]
    assert {node: client_go_refusals(text) for node, text in logs.items()} == {node: [] for node in NODES}
