"""Simulated nodes of one ``kubelet-dra run --nodes`` process join a real control plane, each node with its own
driver; the real kube-scheduler spreads the pods across them.

Ten nodes with the real Go example driver under the admin's credentials; and three nodes under their own node
identities (``system:node:<name>``: the Node authorizer and NodeRestriction apply), with the reference driver
serving all three from one process, each node's instance under that node's identity. Each driver publishes one
device, so the scheduler can place each pod only on a node whose device is still free: a pod Running on every
node proves every node's slices, allocation, prepare and status went through. On deletion every node unprepares
and the real controller manager deletes the generated claims.
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

import attrs
import pytest
from helpers import eventually
from realk8s import (
    GRAPH_LAG,
    RealControlPlane,
    client_go_refusals,
    example_driver_cmd,
    start_control_plane,
    stop_control_plane,
)

IDENTITIES = ("id-0", "id-1", "id-2")
"""Nodes with identities of their own in the control plane (its kubeconfig-node-<name> files)."""


@attrs.frozen
class Variant:
    pattern: str
    nodes: tuple[str, ...]
    driver: str
    node_identities: bool

    def flags(self, plane: RealControlPlane, bin_dir: Path) -> tuple[str, ...]:
        if self.node_identities:  # one reference driver process serves the three, each under its node's identity
            kubeconfig = str(plane.kubeconfig.parent / "kubeconfig-node-{node}")
            return ("--kubeconfig", kubeconfig, "--reference-driver", self.driver, "--devices", "1")
        command = example_driver_cmd(bin_dir, "gpu", "--num-devices 1")
        return ("--kubeconfig", str(plane.kubeconfig), "--driver-name", self.driver, "--driver-cmd", command)


VARIANTS = {
    "ten nodes, Go example drivers": Variant(
        "sim-{0..9}", tuple(f"sim-{i}" for i in range(10)), "gpu.example.com", False
    ),
    "node identities, reference drivers": Variant("id-{0..2}", IDENTITIES, "ref.example.com", True),
}


@pytest.fixture(scope="module")
def cluster(interop_bin: Path) -> Iterator[RealControlPlane]:
    directory = Path(tempfile.mkdtemp(prefix="kd-fleet-", dir="/tmp"))
    plane = start_control_plane(directory, "scheduler", "controller-manager", nodes=IDENTITIES)
    try:
        yield plane
    finally:
        stop_control_plane(directory)
        shutil.rmtree(directory, ignore_errors=True)


def manifests(driver: str, pods: int) -> list[dict[str, Any]]:
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": driver},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{driver}'"}}]},
    }
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": f"one-{driver}", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": driver}}]}}},
    }
    return [device_class, template] + [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"pod-{index}-{driver}", "namespace": "default", "labels": {"app": "fleet"}},
            "spec": {
                "containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": f"one-{driver}"}],
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


@pytest.mark.parametrize("variant", VARIANTS.values(), ids=VARIANTS.keys())
async def test_the_real_scheduler_spreads_pods_across_the_nodes_of_one_process(
    cluster: RealControlPlane, interop_bin: Path, variant: Variant, short_dir: Path
) -> None:
    nodes, count = variant.nodes, len(variant.nodes)
    run = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "kubelet_dra", "run", "--nodes", variant.pattern, "--root-dir", str(short_dir)),
        *("--pod-back-off-period", "0.5", "--sync-frequency", "0.5", *variant.flags(cluster, interop_bin)),
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
        registered = await eventually(lambda: any(f"{count} with a driver registered" in line for line in out), 120)
        assert registered, out
        pod_list = {"kind": "List", "apiVersion": "v1", "items": manifests(variant.driver, count)}
        await kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(pod_list))

        async def placements() -> dict[str, str]:
            return {
                pod["metadata"]["name"]: pod["spec"].get("nodeName", "")
                for pod in await items(cluster, "pods")
                if (pod.get("status") or {}).get("phase") == "Running"
            }

        async def all_running() -> bool:
            return len(await placements()) == count

        wide = ("get", "pods", "-o", "wide")
        assert await eventually(all_running, timeout=180, interval=1), await kubectl(cluster, *wide)
        assert sorted((await placements()).values()) == sorted(nodes), "one pod on each node, by the real scheduler"
        for claim in await items(cluster, "resourceclaims"):
            [result] = claim["status"]["allocation"]["devices"]["results"]
            assert result["driver"] == variant.driver and result["pool"] in nodes
        tally = f"{count} pods running, {count} claims prepared"
        assert await eventually(lambda: any(tally in line for line in out), timeout=10), out[-3:]

        await kubectl(cluster, "delete", "pods", "-l", "app=fleet", "--wait=false")

        async def all_gone() -> bool:
            return not await items(cluster, "pods") and not await items(cluster, "resourceclaims")

        assert await eventually(all_gone, timeout=120, interval=1), "pods finished by their nodes, claims collected"
        assert await eventually(lambda: any("0 pods running, 0 claims prepared" in line for line in out), timeout=10)
    finally:
        if run.returncode is None:
            run.terminate()
        await asyncio.wait_for(run.wait(), 60)
        await asyncio.gather(*readers)
        logs = {log.name: log.read_text() for log in (*short_dir.glob("*.log"), *short_dir.glob("*/*.log"))}
    assert run.returncode == 0
    assert not any("Traceback" in line for line in err), err[-40:]
    refused = [
        line
        for text in (*err, *logs.values())
        for line in text.splitlines()
        if "forbidden" in line and GRAPH_LAG not in line
    ]
    assert refused == [], "every request of the nodes and drivers is one their identity may make"
    assert logs, "the driver processes' logs"
    assert {name: client_go_refusals(text) for name, text in logs.items()} == {name: [] for name in logs}
