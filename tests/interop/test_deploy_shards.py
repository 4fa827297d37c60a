"""``deploy/`` run for real: the StatefulSet's two shards are pods that the real kube-scheduler places on a real
node — the real kubelet 1.36 on containerd and runc — started from the kubelet-dra image that
``deploy/build-image`` builds offline; each pod runs its slice of the fleet (``run --nodes … --shard
INDEX/2``), and every simulated node is Ready, with its reference driver's ResourceSlice, on the control plane
that scheduled the shards. A pod with a claim then lands on one of those nodes and runs.

Skips, naming the fix, where containerd or the image cannot be had: building the image takes minutes the first
time (debootstrap), so the test uses the archive ``deploy/build-image`` left and skips when it is absent or
built from other sources.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
import yaml
from containerd import IMAGE, IMAGE_ARCHIVE, Containerd, containerd, image_missing, runtime_missing
from helpers import eventually
from realk8s import (
    REPO,
    RealControlPlane,
    gpu_pod_manifests,
    real_kubelet,
    real_kubelet_missing,
    start_control_plane,
    stop_control_plane,
)

DEPLOY = REPO / "deploy"
NAMESPACE = "kubelet-dra"
HOST = "host-1"
"""The real node the shards run on."""
DRIVER = "gpu.kubelet-dra.io"
SHARDS = {
    "kubelet-dra-0": [f"kubelet-dra-sim-{i}" for i in range(5)],
    "kubelet-dra-1": [f"kubelet-dra-sim-{i}" for i in range(5, 10)],
}
SIMULATED = "kubelet-dra.io/simulated"
CA_CONFIGMAP = "test-root-ca"


@pytest.fixture
def runtime(interop_bin: Path) -> Iterator[Containerd]:
    """A containerd of the test's own with the kubelet-dra image imported."""
    if reason := real_kubelet_missing() or runtime_missing() or image_missing():
        pytest.skip(reason)
    directory = Path(tempfile.mkdtemp(prefix="kd-ctrd-", dir="/tmp"))
    try:
        with containerd(directory) as running:
            running.ctr("images", "import", "--base-name", IMAGE.rsplit(":", 1)[0], str(IMAGE_ARCHIVE), timeout=300)
            yield running
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def cluster(interop_bin: Path) -> Iterator[RealControlPlane]:
    directory = Path(tempfile.mkdtemp(prefix="kd-shards-", dir="/tmp"))
    plane = start_control_plane(directory, "scheduler", "controller-manager")
    try:
        yield plane
    finally:
        stop_control_plane(directory)
        shutil.rmtree(directory, ignore_errors=True)


def on_this_control_plane(documents: list[dict[str, Any]], plane: RealControlPlane) -> list[dict[str, Any]]:
    """deploy/ as it is, but for what the test control plane and machine lack. The plane has no kube-proxy (the
    Service IP routes nowhere), listens on loopback only, runs without the ServiceAccount admission plugin (no
    token volume is added) and publishes an empty kube-root-ca.crt (its controller manager has no
    --root-ca-file): the shards use the host's network, the API server's address, and the projected token
    volume the admission plugin would have added, with the CA from a ConfigMap of the test. The machine is
    shared by other tests: a CPU request of one core gives each shard the weight of one process of theirs
    (cgroup v1 shares), where 100m starves the drivers' start for minutes."""
    address = urlparse(plane.url)
    plane.kubectl("create", "configmap", CA_CONFIGMAP, "-n", NAMESPACE, f"--from-file=ca.crt={plane.ca}")
    for document in documents:
        if document["kind"] != "StatefulSet":
            continue
        pod = document["spec"]["template"]["spec"]
        pod["hostNetwork"] = True
        container = pod["containers"][0]
        container["resources"]["requests"]["cpu"] = "1"
        container["env"] += [
            {"name": "KUBERNETES_SERVICE_HOST", "value": address.hostname},
            {"name": "KUBERNETES_SERVICE_PORT", "value": str(address.port)},
        ]
        container["volumeMounts"].append(
            {"name": "account", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": True}
        )
        sources = [
            {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
            {"configMap": {"name": CA_CONFIGMAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
        ]
        pod["volumes"].append({"name": "account", "projected": {"sources": sources}})
    return documents


def shard_users() -> set[str]:
    """The user ids of the ``kubelet-dra run`` processes that containerd runs (in its cgroups, ``/k8s.io/…``)."""
    users = set()
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            in_runtime = ":/k8s.io/" in (proc / "cgroup").read_text()
            status = (proc / "status").read_text()
        except OSError:
            continue  # gone meanwhile
        if in_runtime and b"kubelet_dra" in argv and b"run" in argv:
            users.add(next(line.split()[1] for line in status.splitlines() if line.startswith("Uid:")))
    return users


def ready(node: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in node["status"].get("conditions", []))


async def test_two_shards_run_as_pods_and_their_nodes_are_ready_with_slices(
    runtime: Containerd, cluster: RealControlPlane
) -> None:
    for path in ("00-namespace.yaml", "10-rbac.yaml", "15-policy.yaml"):
        cluster.kubectl("apply", "-f", str(DEPLOY / path))
    nodes = on_this_control_plane(list(yaml.safe_load_all((DEPLOY / "20-nodes.yaml").read_text())), cluster)
    kubelet_args = f"--container-runtime-endpoint={runtime.endpoint} --image-service-endpoint={runtime.endpoint}"
    with real_kubelet(cluster, HOST, env={"KUBELET_ARGS": kubelet_args}) as kubelet:
        cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(nodes))

        def shards() -> dict[str, dict[str, Any]]:
            pods = (cluster.get("pods", "-n", NAMESPACE) or {"items": []})["items"]
            return {pod["metadata"]["name"]: pod for pod in pods}

        running = await eventually(
            lambda: len(pods := shards()) == 2 and all(p["status"].get("phase") == "Running" for p in pods.values()),
            timeout=120,
            interval=1,
        )
        assert running, json.dumps({name: pod["status"] for name, pod in shards().items()})[:3000]
        for pod in shards().values():
            assert pod["spec"]["nodeName"] == HOST  # placed by the real scheduler: the manifest names no node
            (status,) = pod["status"]["containerStatuses"]
            assert status["image"] == IMAGE and status["containerID"].startswith("containerd://"), status

        assert shard_users() == {"65532"}  # the manifest's user, not root, in containerd's cgroups

        every = sorted(name for names in SHARDS.values() for name in names)

        def simulated() -> dict[str, dict[str, Any]]:
            found = (cluster.get("nodes", "-l", f"{SIMULATED}=true") or {"items": []})["items"]
            return {node["metadata"]["name"]: node for node in found}

        def sliced() -> set[str]:
            slices = (cluster.get("resourceslices") or {"items": []})["items"]
            return {s["spec"]["nodeName"] for s in slices if s["spec"]["driver"] == DRIVER}

        assert await eventually(
            lambda: sorted(simulated()) == every and all(map(ready, simulated().values())) and sliced() == set(every),
            timeout=120,
            interval=1,
        ), (sorted(simulated()), sorted(sliced()))

        # each shard ran its own slice of the names, and only it
        for pod, names in SHARDS.items():
            (log_dir,) = (kubelet.root_dir / "pod-logs").glob(f"{NAMESPACE}_{pod}_*")
            log = "\n".join(path.read_text(errors="replace") for path in log_dir.rglob("*.log"))
            assert f"{len(names)} nodes under /var/lib/kubelet-dra" in log, log[-2000:]
            mentioned = {name for name in every if f"node={name} " in log or f"node={name}\n" in log}
            assert mentioned == set(names), log[-2000:]

        # a pod with a claim, placed by the real scheduler on a simulated node, runs there
        _, template, pod = gpu_pod_manifests(DRIVER, None)
        pod["spec"]["tolerations"] = [{"key": SIMULATED, "operator": "Exists", "effect": "NoSchedule"}]
        cluster.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all([template, pod]))
        placed = await eventually(
            lambda: (got := cluster.get("pod", "gpu-pod")) and got["status"].get("phase") == "Running" and got,
            timeout=60,
            interval=0.5,
        )
        assert placed, cluster.get("pod", "gpu-pod")
        assert placed["spec"]["nodeName"] in every

        cluster.kubectl("delete", "pod", "gpu-pod", "--wait=true", "--timeout=60s")
        cluster.kubectl("delete", "statefulset", "kubelet-dra", "-n", NAMESPACE)
        assert await eventually(lambda: not shards(), timeout=90, interval=1), sorted(shards())
