"""``kubelet-dra run`` joins a real control plane as a node, with the real DRA example driver behind it.

The real kube-scheduler places a pod whose claim comes from a template onto the simulated node and
allocates a device the Go driver published; the node prepares it through the driver and reports the
pod Running; on deletion it unprepares, and the real kube-controller-manager deletes the generated
claim. Throughout, and past the node monitor grace period, the node lifecycle controller keeps the
node Ready and untainted: its status heartbeats and Lease renewals reach it.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import KubeletDRAProcess, eventually
from realk8s import RealControlPlane, client_go_refusals, start_control_plane, stop_control_plane

NODE = "sim-1"
GRACE_PERIOD = 50
"""kube-controller-manager 1.36's default --node-monitor-grace-period, in seconds."""
MANIFESTS = [
    {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.example.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]},
    },
    {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": "default"},
        "spec": {
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}
        },
    },
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "gpu-pod", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
        },
    },
]


@pytest.fixture(scope="module")
def cluster(interop_bin: Path) -> Iterator[RealControlPlane]:
    directory = Path(tempfile.mkdtemp(prefix="kd-cluster-", dir="/tmp"))
    plane = start_control_plane(directory, "scheduler", "controller-manager")
    try:
        yield plane
    finally:
        stop_control_plane(directory)
        shutil.rmtree(directory, ignore_errors=True)


def kubectl(plane: RealControlPlane, *args: str, stdin: str = "") -> str:
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(plane.kubeconfig), *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
    return result.stdout


def get(plane: RealControlPlane, *what: str) -> dict[str, Any] | None:
    result = subprocess.run(
        ["kubectl", "--kubeconfig", str(plane.kubeconfig), "get", *what, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return json.loads(result.stdout) if result.returncode == 0 else None


def ready_and_untainted(node: dict[str, Any] | None) -> bool:
    if node is None:
        return False
    ready = [c for c in node["status"].get("conditions", []) if c["type"] == "Ready"]
    return bool(ready) and ready[0]["status"] == "True" and not node.get("spec", {}).get("taints")


async def test_a_pod_runs_on_the_simulated_node_through_the_real_control_plane(
    cluster: RealControlPlane, interop_bin: Path, tmp_path: Path
):
    registry, plugins, cdi = tmp_path / "registry", tmp_path / "plugins", tmp_path / "cdi"
    for directory in (registry, plugins, cdi):
        directory.mkdir()
    started = time.monotonic()
    node = await KubeletDRAProcess.start(
        *("run", "--node-name", NODE, "--registry-dir", str(registry), "--kubeconfig", str(cluster.kubeconfig)),
        *("--state-dir", str(tmp_path / "state"), "--pod-retry-period", "0.5"),
    )
    driver_log = (tmp_path / "driver.log").open("w")
    driver = subprocess.Popen(
        [
            str(interop_bin / "dra-example-kubeletplugin"),
            *("--node-name", NODE, "--kubeconfig", str(cluster.kubeconfig)),
            *("--kubelet-registrar-directory-path", str(registry), "--kubelet-plugins-directory-path", str(plugins)),
            *("--cdi-root", str(cdi), "--device-profile", "gpu", "--kube-api-qps", "1000", "--kube-api-burst", "1000"),
        ],
        stdout=driver_log,
        stderr=subprocess.STDOUT,
    )
    try:
        await node.wait_line('msg="Registered DRA plugin"', timeout=60)
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": MANIFESTS}))

        def pod() -> dict[str, Any] | None:
            return get(cluster, "pod", "gpu-pod", "-n", "default")

        running = await eventually(lambda: (pod() or {}).get("status", {}).get("phase") == "Running", timeout=60)
        assert running, json.dumps(pod(), indent=1)[-3000:]
        placed = pod() or {}
        assert placed["spec"]["nodeName"] == NODE, "the real scheduler placed it"
        claim_name = placed["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
        claim = get(cluster, "resourceclaim", claim_name, "-n", "default") or {}
        [result] = claim["status"]["allocation"]["devices"]["results"]
        assert result["driver"] == "gpu.example.com" and result["pool"] == NODE
        await node.wait_line("Starting container.*cdiDevices", timeout=10)

        kubectl(cluster, "delete", "pod", "gpu-pod", "-n", "default", "--wait=false")
        assert await eventually(lambda: pod() is None, timeout=60), "the node finished the pod's deletion"
        await node.wait_line('msg="Unprepared dynamic resources"', timeout=10)
        gone = await eventually(lambda: get(cluster, "resourceclaim", claim_name, "-n", "default") is None, timeout=60)
        assert gone, "the real controller manager deleted the generated claim"

        await asyncio.sleep(max(0.0, GRACE_PERIOD + 10 - (time.monotonic() - started)))
        assert ready_and_untainted(get(cluster, "node", NODE)), json.dumps(get(cluster, "node", NODE), indent=1)
        lease = get(cluster, "lease", NODE, "-n", "kube-node-lease") or {}
        assert lease["spec"]["holderIdentity"] == NODE and lease["spec"]["leaseDurationSeconds"] == 40
    finally:
        driver.terminate()
        driver.wait(timeout=30)
        driver_log.close()
        assert await node.stop() == 0
    assert not any("Traceback" in line for line in node.lines), node.lines
    assert client_go_refusals((tmp_path / "driver.log").read_text()) == []
