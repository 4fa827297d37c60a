"""Fixtures for the pod lifecycle tests: a real ``Node`` running pods, the reference driver, API objects.

The API server is the session's embedded one; the driver is ``kubelet-dra driver`` as a process
registering with the node through a temp registry dir; pods and claims are created over HTTP.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from helpers import KubeletDRAProcess

from kubelet_dra.apiserver.testing import ServerThread
from kubelet_dra.kube.client import KubeApiError, KubeClient, api_path
from kubelet_dra.node import Node, NodeOptions
from kubelet_dra.registration import HandshakeTimeouts

GPU = "gpu.example.com"
NAMESPACE = "default"
RESOURCE = "resource.k8s.io"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class Cluster:
    """One test's node name, directories and API client, with ways to start the node and driver and make objects."""

    def __init__(self, root: Path, kube: KubeClient, kubeconfig: Path) -> None:
        self.root = root
        self.kube = kube
        self.kubeconfig = kubeconfig
        self.node_name = unique("node")
        self.drivers: list[KubeletDRAProcess] = []

    @contextlib.asynccontextmanager
    async def node(self) -> AsyncIterator[Node]:
        """A node that runs its pods, retrying failed pod syncs after a fraction of a second."""
        options = NodeOptions(
            state_dir=str(self.root / "state"),
            pod_retry_period=0.2,
            handshake=HandshakeTimeouts(dial=1.0, get_info=1.0, notify=5.0),
        )
        async with Node(self.node_name, str(self.root / "reg"), kubeconfig=str(self.kubeconfig), options=options) as n:
            yield n

    async def start_driver(self, node: Node, *flags: str) -> None:
        """Start the reference driver and wait until ``node`` can call it."""
        await self.spawn_driver(*flags)
        await node.wait_for(lambda: node.plugins.usable(GPU), timeout=20)

    async def spawn_driver(self, *flags: str) -> KubeletDRAProcess:
        process = await KubeletDRAProcess.start(
            *("driver", "--driver-name", GPU, "--node-name", self.node_name, "--kubeconfig", str(self.kubeconfig)),
            *("--registry-dir", str(self.root / "reg"), "--plugin-dir", str(self.root / "plugin")),
            *("--cdi-root", str(self.root / "cdi"), *flags),
        )
        self.drivers.append(process)
        await process.wait_line("driver started")
        return process

    async def driver_command(self, *args: str) -> None:
        """``kubelet-dra driver ARGS --plugin-dir DIR`` against the running driver, e.g. ``fault set KNOB=V``."""
        command, *rest = args
        process = await KubeletDRAProcess.start("driver", command, "--plugin-dir", str(self.root / "plugin"), *rest)
        assert await process.wait() == 0, "\n".join(process.lines)

    async def pod_with_claim(self) -> dict[str, Any]:
        """A pod bound to this node whose container uses a claim allocated device-0 and reserved for the pod.

        The pod exists (with its UID) before the reservation, so a node may see it first and retry."""
        claim_name = unique("claim")
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": unique("pod"), "namespace": NAMESPACE},
            "spec": {
                "nodeName": self.node_name,
                "resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}],
                "containers": [{"name": "main", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
            },
        }
        pod = await self.kube.request("POST", api_path("", "v1", "pods", namespace=NAMESPACE), body=pod)
        spec = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "example"}}]}}
        path = api_path(RESOURCE, "v1", "resourceclaims", namespace=NAMESPACE)
        claim = await self.kube.request(
            "POST",
            path,
            body={
                "apiVersion": f"{RESOURCE}/v1",
                "kind": "ResourceClaim",
                "metadata": {"name": claim_name},
                "spec": spec,
            },
        )
        result = {"request": "gpu", "driver": GPU, "pool": self.node_name, "device": "device-0"}
        meta = pod["metadata"]
        claim["status"] = {
            "allocation": {"devices": {"results": [result]}},
            "reservedFor": [{"resource": "pods", "name": meta["name"], "uid": meta["uid"]}],
        }
        await self.kube.request("PUT", f"{path}/{claim_name}/status", body=claim)
        return pod

    async def get_pod(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        """The pod as the API server has it now; ``None`` once it is gone."""
        path = api_path("", "v1", "pods", namespace=NAMESPACE, name=pod["metadata"]["name"])
        try:
            return await self.kube.request("GET", path)
        except KubeApiError as err:
            if err.not_found:
                return None
            raise

    async def delete_pod(self, pod: dict[str, Any]) -> None:
        """Delete as ``kubectl delete pod`` does: gracefully, so the node has to finish it."""
        await self.kube.request("DELETE", api_path("", "v1", "pods", namespace=NAMESPACE, name=pod["metadata"]["name"]))

    async def events(self, pod: dict[str, Any]) -> list[dict[str, Any]]:
        listed = await self.kube.request("GET", api_path("", "v1", "events", namespace=NAMESPACE))
        return [e for e in listed["items"] if e["involvedObject"].get("uid") == pod["metadata"]["uid"]]


@pytest.fixture
async def cluster(apiserver: ServerThread) -> AsyncIterator[Cluster]:
    """A short root dir (Unix socket paths are limited to 107 bytes) and a node name of its own."""
    root = Path(tempfile.mkdtemp(prefix="kd-", dir="/tmp"))
    kube = KubeClient.from_kubeconfig(str(apiserver.kubeconfig))
    environment = Cluster(root, kube, apiserver.kubeconfig)
    try:
        yield environment
    finally:
        for driver in environment.drivers:
            await driver.stop()
        kube.close()
        shutil.rmtree(root, ignore_errors=True)
