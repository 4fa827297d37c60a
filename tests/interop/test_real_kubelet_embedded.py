"""The real kubelet 1.36.2 runs on the embedded API server, the most demanding client there is.

``kubelet-dra apiserver`` is its API server and ``kubelet-dra controlplane`` allocates its claims; the real kubelet
registers a Ready Node, creates its CSINode, renews its Lease in kube-node-lease, watches Services, RuntimeClasses
and CSIDrivers, and runs a pod with a DRA claim: a driver (our reference driver, then the Go example driver)
registers with it, it calls NodePrepareResources, patches the pod's status to Running, and on deletion calls
NodeUnprepareResources and deletes the pod. Its log at -v 6 shows every request and answer: none may be refused
(404 of anything but the get of an object it then creates, 4xx/5xx, undecodable bodies, failed watches).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import eventually
from realk8s import (
    CLIENT_GO_REFUSALS,
    RealControlPlane,
    RealKubelet,
    embedded_control_plane,
    gpu_pod_manifests,
    real_kubelet,
    real_kubelet_missing,
    restart_real_kubelet,
)

NODE = "node-1"
DRIVER = "gpu.example.com"
MANIFESTS = gpu_pod_manifests(DRIVER, NODE)
RESPONSE = re.compile(r'"Response" verb="(?P<verb>[A-Z]+)" url="(?P<url>[^"]+)" status="(?P<status>\d+)')
GET_BEFORE_CREATE = re.compile(
    r"/api/v1/nodes/[^/?]+|/apis/coordination\.k8s\.io/v1/namespaces/kube-node-lease/leases/[^/?]+"
    r"|/apis/storage\.k8s\.io/v1/csinodes/[^/?]+"
)
"""The objects the kubelet gets, and creates when absent (404): its Node, its Lease, its CSINode."""
REGISTERED = "Registered DRA plugin"
WATCH_TROUBLE = ("Failed to watch", "failed to list", "Unhandled Error", "the server could not find")


@pytest.fixture(params=["admin", "node-identity"])
def plane(request: pytest.FixtureRequest, interop_bin: Path) -> Iterator[RealControlPlane]:
    """The embedded server and the offline control plane; with ``node-identity`` node-restricted, the kubelet and
    its driver then act as ``system:node:node-1`` (what a node may write: docs/apiserver.md)."""
    if reason := real_kubelet_missing():
        pytest.skip(reason)
    directory = Path(tempfile.mkdtemp(prefix="kd-emb-", dir="/tmp"))
    nodes = (NODE,) if request.param == "node-identity" else ()
    try:
        with embedded_control_plane(directory, nodes) as plane:
            yield plane
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def driver_command(which: str, plane: RealControlPlane, kubelet: RealKubelet, interop_bin: Path) -> list[str]:
    """The driver's command; it uses the kubelet's identity (the node's when the server is node-restricted)."""
    cdi = str(kubelet.dir / "cdi")
    identity = plane.dir / f"kubeconfig-node-{NODE}"
    kubeconfig = str(identity if identity.is_file() else plane.kubeconfig)
    if which == "reference":
        return [
            *(sys.executable, "-m", "kubelet_dra", "driver", "--driver-name", DRIVER, "--node-name", NODE),
            *("--kubeconfig", kubeconfig, "--registry-dir", str(kubelet.registry_dir)),
            *("--plugin-dir", str(kubelet.plugins_dir / DRIVER), "--cdi-root", cdi, "--health"),
        ]
    return [
        str(interop_bin / "dra-example-kubeletplugin"),
        *("--node-name", NODE, "--kubeconfig", kubeconfig),
        *("--kubelet-registrar-directory-path", str(kubelet.registry_dir)),
        *("--kubelet-plugins-directory-path", str(kubelet.plugins_dir), "--cdi-root", cdi),
        *("--device-profile", "gpu", "--kube-api-qps", "1000", "--kube-api-burst", "1000"),
    ]


def refused_requests(log: str) -> list[str]:
    """Every request of the kubelet the server refused, but the get of an object the kubelet creates next and a
    restarted kubelet's registration of its existing Node (a real kube-apiserver answers both alike)."""
    refused = []
    for match in RESPONSE.finditer(log):
        status, verb, url = int(match["status"]), match["verb"], match["url"]
        path = url.split("://", 1)[-1].partition("/")[2].partition("?")[0]
        if status < 400 or (status == 404 and verb == "GET" and GET_BEFORE_CREATE.fullmatch("/" + path)):
            continue
        if (status, verb, path) == (409, "POST", "api/v1/nodes"):
            continue  # a restarted kubelet registers again: AlreadyExists, then it reconciles the Node it finds
        refused.append(match.group(0))
    return refused


def reserved_claim(plane: RealControlPlane) -> str:
    """The name of the pod's claim once it is allocated and reserved for the pod, else ''."""
    for claim in (plane.get("resourceclaims", "-n", "default") or {}).get("items", []):
        if claim.get("status", {}).get("allocation") and claim["status"].get("reservedFor"):
            return str(claim["metadata"]["name"])
    return ""


def called(kubelet: RealKubelet, message: str, claim: str) -> bool:
    """Whether the real kubelet's log (-v 4 and up) shows the call ``message`` with ``claim`` in its request."""
    return any(message in line and f'name:\\"{claim}\\"' in line for line in kubelet.log().splitlines())


def renew_time(plane: RealControlPlane) -> datetime.datetime | None:
    lease = plane.get("lease", NODE, "-n", "kube-node-lease")
    if lease is None or not lease["spec"].get("renewTime"):
        return None
    return datetime.datetime.fromisoformat(lease["spec"]["renewTime"])


@pytest.mark.parametrize("which", ["reference", "example"])
async def test_the_real_kubelet_runs_a_dra_pod_on_the_embedded_api_server(
    plane: RealControlPlane, interop_bin: Path, which: str
):
    with real_kubelet(plane, NODE, env={"KUBELET_V": "6"}) as kubelet:
        node = plane.get("node", NODE) or {}
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready and ready[0]["status"] == "True", json.dumps(node["status"], indent=1)
        csinode = plane.get("csinode", NODE) or {}
        assert csinode["metadata"]["ownerReferences"][0]["name"] == NODE, "the kubelet created its CSINode"
        first_renewal = await eventually(lambda: renew_time(plane), timeout=30, interval=0.2)
        assert first_renewal is not None, "the kubelet created its Lease"

        driver_log = (kubelet.dir / f"{which}-driver.log").open("w")
        driver = subprocess.Popen(
            driver_command(which, plane, kubelet, interop_bin), stdout=driver_log, stderr=subprocess.STDOUT
        )
        try:
            registered = await eventually(
                lambda: any(REGISTERED in line and DRIVER in line for line in kubelet.log().splitlines()),
                timeout=60,
                interval=0.2,
            )
            assert registered, (kubelet.dir / f"{which}-driver.log").read_text()[-3000:]
            published = await eventually(
                lambda: (plane.get("resourceslices") or {}).get("items"), timeout=60, interval=0.2
            )
            assert published, "the driver published its ResourceSlices"
            for manifest in MANIFESTS:
                plane.kubectl("apply", "-f", "-", stdin=json.dumps(manifest))
            reserved = await eventually(lambda: reserved_claim(plane), timeout=30, interval=0.2)
            assert reserved, "the offline control plane made, allocated and reserved the pod's claim"
            # The pod reached the kubelet before its claim existed (nothing schedules it: it names its node); the
            # real kubelet's failed prepare is no sync error, so its pod worker would retry only at its 1-minute
            # resync. A change of the pod's metadata is an UPDATE it syncs at once, as a scheduler's bind would be.
            plane.kubectl("label", "pod", "gpu-pod", "-n", "default", "example.com/claim=reserved")

            def pod() -> dict[str, Any] | None:
                return plane.get("pod", "gpu-pod", "-n", "default")

            running = await eventually(lambda: (pod() or {}).get("status", {}).get("phase") == "Running", timeout=60)
            assert running, json.dumps(pod(), indent=1)[-3000:] + "\n" + kubelet.log()[-3000:]
            status = (pod() or {})["status"]
            types = [c["type"] for c in status["conditions"]]
            assert len(types) == len(set(types)), f"strategic merge patches keep one condition per type: {types}"
            conditions = {c["type"]: c["status"] for c in status["conditions"]}
            assert conditions["Ready"] == "True" and conditions["PodReadyToStartContainers"] == "True"
            assert status["containerStatuses"][0]["state"]["running"], "the kubelet's own status patch"
            assert status["resourceClaimStatuses"][0]["resourceClaimName"] == reserved
            assert reserved in kubelet.checkpoint.read_text(), "the real kubelet checkpointed the prepared claim"
            assert called(kubelet, "Calling NodePrepareResources rpc", reserved), "the kubelet prepared the claim"

            plane.kubectl("delete", "pod", "gpu-pod", "-n", "default", "--wait=false")
            assert await eventually(lambda: pod() is None, timeout=60), "the kubelet finished the pod's deletion"
            # (the real kubelet's message says "NodeUnprepareResource", singular)
            assert called(kubelet, "Calling NodeUnprepareResource rpc", reserved), "the kubelet unprepared the claim"
            assert reserved not in kubelet.checkpoint.read_text(), "the claim left the checkpoint"

            renewed = await eventually(
                lambda: (renew_time(plane) or first_renewal) > first_renewal, timeout=30, interval=0.5
            )
            assert renewed, "the kubelet renews its Lease (every 10 s)"
            node_status = (plane.get("node", NODE) or {})["status"]
            assert sorted(c["type"] for c in node_status["conditions"]) == [
                *("DiskPressure", "MemoryPressure", "PIDPressure", "Ready")
            ], "the node status patches merged by type"
            assert [a["type"] for a in node_status["addresses"]] == ["InternalIP", "Hostname"]
        finally:
            driver.terminate()
            driver.wait(timeout=30)
            driver_log.close()
            await asyncio.sleep(0)
        log = kubelet.log()
    assert refused_requests(log) == []
    assert [line for line in log.splitlines() if any(mark in line for mark in WATCH_TROUBLE)] == []
    assert [line for line in log.splitlines() if any(mark in line for mark in CLIENT_GO_REFUSALS)] == []


async def test_the_real_kubelet_restarts_and_crashes_on_the_embedded_api_server(plane: RealControlPlane):
    """A restart finds its Node, Lease and CSINode and updates them (SIGTERM, then SIGKILL): Ready again each time."""
    with real_kubelet(plane, NODE, env={"KUBELET_V": "6"}) as kubelet:
        first = (plane.get("node", NODE) or {})["metadata"]["uid"]
        for kill in (False, True):
            kubelet = restart_real_kubelet(plane, NODE, env={"KUBELET_V": "6"}, kill=kill)
            node = plane.get("node", NODE) or {}
            assert node["metadata"]["uid"] == first, "the same Node, updated"
            assert [c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready"] == ["True"]
        first_renewal = await eventually(lambda: renew_time(plane), timeout=30, interval=0.2)
        renewed = await eventually(
            lambda: (renew_time(plane) or first_renewal) > first_renewal, timeout=30, interval=0.5
        )
        assert renewed, "the restarted kubelet renews the Lease it found"
        log = kubelet.log()
    assert refused_requests(log) == []
    assert [line for line in log.splitlines() if any(mark in line for mark in WATCH_TROUBLE)] == []
