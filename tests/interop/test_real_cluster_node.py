"""``kubelet-dra run`` joins a real control plane as a node, with a DRA driver behind it, under each identity
a node can have: the admin's, its own node identity (``system:node:<name>``, where the Node authorizer and
NodeRestriction admission decide what it may do, as for a real kubelet), and a service account bound to the
roles and under the admission policy of ``deploy/`` (a pod's in-cluster credentials, the driver on its own
account).

The real kube-scheduler places a pod whose claim comes from a template onto the simulated node and
allocates a device the driver published; the node prepares it through the driver and reports the pod
Running; on deletion it unprepares, and the real kube-controller-manager deletes the generated claim.
Throughout, and past the node monitor grace period, the node lifecycle controller keeps the node Ready
and untainted: its status heartbeats and Lease renewals reach it.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest
from helpers import KubeletDRAProcess, eventually
from realk8s import (
    GRAPH_LAG,
    REPO,
    RealControlPlane,
    client_go_refusals,
    gpu_pod_manifests,
    start_control_plane,
    stop_control_plane,
)

NODE = "kubelet-dra-sim-1"
"""Named, and labelled under the service account, as deploy/ names and labels its simulated nodes: its admission
policy lets the accounts of deploy/ write only such nodes."""
DRIVER = "gpu.example.com"
GRACE_PERIOD = 50
"""kube-controller-manager 1.36's default --node-monitor-grace-period, in seconds."""
DEPLOY = REPO / "deploy"
NAMESPACE = "kubelet-dra"
UNIMPLEMENTED_HEALTH = "unknown service v1alpha1.DRAResourceHealth"
"""The Go example driver has no health service; the kubelet logs its refusal of NodeWatchResources, rightly."""
MANIFESTS = gpu_pod_manifests(DRIVER, None)
SIMULATED = ("--node-label", "kubelet-dra.io/simulated=true")


@attrs.frozen
class Joining:
    """How the node and its driver reach the control plane under one identity."""

    node_args: tuple[str, ...]
    """``kubelet-dra run``'s flags that choose the API server and credentials."""
    node_env: Mapping[str, str]
    driver: list[str]
    """The driver's command, its dirs under ``{registry}``, ``{plugins}`` and ``{cdi}``."""


@pytest.fixture(scope="module", params=["admin", "node-identity", "service-account"])
def identity(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def cluster(interop_bin: Path, identity: str) -> Iterator[RealControlPlane]:
    directory = Path(tempfile.mkdtemp(prefix="kd-cluster-", dir="/tmp"))
    plane = start_control_plane(directory, "scheduler", "controller-manager", nodes=(NODE,))
    try:
        yield plane
    finally:
        stop_control_plane(directory)
        shutil.rmtree(directory, ignore_errors=True)


def joining(identity: str, plane: RealControlPlane, interop_bin: Path, tmp_path: Path) -> Joining:
    example_driver = [
        str(interop_bin / "dra-example-kubeletplugin"),
        *("--node-name", NODE, "--kubeconfig", str(plane.kubeconfig)),
        *("--kubelet-registrar-directory-path", "{registry}", "--kubelet-plugins-directory-path", "{plugins}"),
        *("--cdi-root", "{cdi}", "--device-profile", "gpu", "--kube-api-qps", "1000", "--kube-api-burst", "1000"),
    ]
    if identity == "admin":
        return Joining(("--kubeconfig", str(plane.kubeconfig)), {}, example_driver)
    if identity == "node-identity":
        return Joining(("--kubeconfig", str(plane.node_kubeconfig(NODE))), {}, example_driver)
    # deploy/'s roles, each on an account of its own, to prove each one enough by itself, under deploy/'s policy
    for path in (DEPLOY / "00-namespace.yaml", DEPLOY / "10-rbac.yaml", DEPLOY / "15-policy.yaml"):
        plane.kubectl("apply", "-f", str(path))
    node_account = plane.service_account("node-only", NAMESPACE, tmp_path / "node-account")
    driver_account = plane.service_account("driver-only", NAMESPACE, tmp_path / "driver-account")
    for name, role in (("node-only", "kubelet-dra-node"), ("driver-only", "kubelet-dra-driver")):
        plane.kubectl(
            "create", "clusterrolebinding", name, "--clusterrole", role, f"--serviceaccount={NAMESPACE}:{name}"
        )
    lease = ("-n", "kube-node-lease", "--role", "kubelet-dra-node-lease")
    plane.kubectl("create", "rolebinding", "node-only", *lease, f"--serviceaccount={NAMESPACE}:node-only")
    driver_kubeconfig = plane.kubeconfig_of((driver_account / "token").read_text(), tmp_path / "driver.kubeconfig")
    reference_driver = [
        *(sys.executable, "-m", "kubelet_dra", "driver", "--driver-name", DRIVER, "--node-name", NODE),
        *("--kubeconfig", str(driver_kubeconfig), "--registry-dir", "{registry}"),
        *("--plugin-dir", "{plugins}/" + DRIVER, "--cdi-root", "{cdi}", "--health"),
    ]
    host, port = plane.url.removeprefix("https://").rsplit(":", 1)
    return Joining(
        ("--in-cluster", str(node_account), "--kubeconfig-out", str(tmp_path / "node.kubeconfig"), *SIMULATED),
        {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": port},
        reference_driver,
    )


def ready_and_untainted(node: dict[str, Any] | None) -> bool:
    if node is None:
        return False
    ready = [c for c in node["status"].get("conditions", []) if c["type"] == "Ready"]
    return bool(ready) and ready[0]["status"] == "True" and not node.get("spec", {}).get("taints")


async def test_a_pod_runs_on_the_simulated_node_through_the_real_control_plane(
    cluster: RealControlPlane, identity: str, interop_bin: Path, tmp_path: Path, short_dir: Path
):
    dirs = {name: short_dir / name for name in ("registry", "plugins", "cdi")}
    for directory in dirs.values():
        directory.mkdir()
    join = joining(identity, cluster, interop_bin, tmp_path)
    started = time.monotonic()
    node = await KubeletDRAProcess.start(
        *("run", "--node-name", NODE, "--registry-dir", str(dirs["registry"]), *join.node_args),
        *("--state-dir", str(tmp_path / "state"), "--pod-back-off-period", "0.5", "--sync-frequency", "0.5"),
        env=join.node_env,
    )
    driver_log = (tmp_path / "driver.log").open("w")
    driver = subprocess.Popen(
        [word.format_map({name: str(path) for name, path in dirs.items()}) for word in join.driver],
        stdout=driver_log,
        stderr=subprocess.STDOUT,
    )
    try:
        try:
            await node.wait_line('msg="Registered DRA plugin"', timeout=120)
        except TimeoutError:
            logs = "\n".join(node.lines[-40:]) + "\n--- driver:\n" + (tmp_path / "driver.log").read_text()[-3000:]
            raise AssertionError(f"the driver did not register within 120 s:\n{logs}") from None
        cluster.kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": MANIFESTS}))

        def pod() -> dict[str, Any] | None:
            return cluster.get("pod", "gpu-pod", "-n", "default")

        running = await eventually(lambda: (pod() or {}).get("status", {}).get("phase") == "Running", timeout=60)
        assert running, json.dumps(pod(), indent=1)[-3000:] + "\n" + "\n".join(node.lines[-30:])
        placed = pod() or {}
        assert placed["spec"]["nodeName"] == NODE, "the real scheduler placed it"
        claim_name = placed["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
        claim = cluster.get("resourceclaim", claim_name, "-n", "default") or {}
        [result] = claim["status"]["allocation"]["devices"]["results"]
        assert result["driver"] == DRIVER and result["pool"] == NODE
        await node.wait_line("Starting container.*cdiDevices", timeout=10)

        cluster.kubectl("delete", "pod", "gpu-pod", "-n", "default", "--wait=false")
        assert await eventually(lambda: pod() is None, timeout=60), "the node finished the pod's deletion"
        await node.wait_line('msg="Unprepared dynamic resources"', timeout=10)
        gone = await eventually(lambda: cluster.get("resourceclaim", claim_name, "-n", "default") is None, timeout=60)
        assert gone, "the real controller manager deleted the generated claim"

        await asyncio.sleep(max(0.0, GRACE_PERIOD + 10 - (time.monotonic() - started)))
        assert ready_and_untainted(cluster.get("node", NODE)), json.dumps(cluster.get("node", NODE), indent=1)
        lease = cluster.get("lease", NODE, "-n", "kube-node-lease") or {}
        assert lease["spec"]["holderIdentity"] == NODE and lease["spec"]["leaseDurationSeconds"] == 40
    finally:
        driver.terminate()
        driver.wait(timeout=30)
        driver_log.close()
        assert await node.stop() == 0
    marks = ("Traceback", "level=error", "level=warning", "forbidden")
    troubles = [
        line
        for line in node.lines
        if any(mark in line for mark in marks) and UNIMPLEMENTED_HEALTH not in line and GRAPH_LAG not in line
    ]
    assert not troubles, "\n".join(troubles)
    assert 'msg="Deleted ResourceSlices"' in "\n".join(node.lines), "the startup wipe went through"
    assert client_go_refusals((tmp_path / "driver.log").read_text()) == []
