"""Fixtures for the DRA manager tests: one API server per session; per test a node, reference drivers, claims.

Everything is real: claims live in the embedded API server, the reference driver runs as its own
process and the manager talks to it over its Unix socket through a ``Node``.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers import KubeletDRAProcess

from kubelet_dra.apiserver.testing import ServerThread
from kubelet_dra.kube.client import KubeClient, api_path
from kubelet_dra.manager import Checkpoint, DRAManager
from kubelet_dra.node import Node, NodeOptions
from kubelet_dra.plugins import CallRecord
from kubelet_dra.registration import HandshakeTimeouts

GPU = "gpu.example.com"
NIC = "nic.example.com"
NAMESPACE = "default"
RESOURCE = "resource.k8s.io"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class DriverProcess(KubeletDRAProcess):
    """``kubelet-dra driver`` as a subprocess, with its fault knobs at hand."""

    def __init__(self, proc: asyncio.subprocess.Process, plugin_dir: Path) -> None:
        super().__init__(proc)
        self.plugin_dir = plugin_dir

    async def fault(self, action: str, *knobs: str) -> None:
        """``kubelet-dra driver fault ACTION KNOBS`` against this driver, e.g. ``fault("clear", "prepare-block")``."""
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "kubelet_dra", "driver", "fault", "--plugin-dir", str(self.plugin_dir)),
            *(action, *knobs),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        _, err = await proc.communicate()
        assert proc.returncode == 0, err.decode()


class Env:
    """One test's node: its directories, the API server, drivers, claims and pods."""

    def __init__(self, root: Path, kube: KubeClient, kubeconfig: Path) -> None:
        self.root = root
        self.kube = kube
        self.kubeconfig = kubeconfig
        self.node_name = unique("node")
        self.registry = root / "reg"
        self.state_dir = root / "state"
        self.drivers: list[DriverProcess] = []

    @property
    def checkpoint(self) -> Checkpoint:
        return Checkpoint(self.state_dir)

    @contextlib.asynccontextmanager
    async def node(self, **options: Any) -> AsyncIterator[Node]:
        options.setdefault("handshake", HandshakeTimeouts(dial=1.0, get_info=1.0, notify=5.0))
        async with Node(
            self.node_name, str(self.registry), kubeconfig=str(self.kubeconfig), options=NodeOptions(**options)
        ) as node:
            yield node

    def manager(self, node: Node, **options: Any) -> DRAManager:
        return DRAManager(node, self.checkpoint, **options)

    @staticmethod
    def calls(node: Node, method: str, driver: str | None = None) -> list[CallRecord]:
        return node.recorder.records(driver=driver, method=method)

    @staticmethod
    def sent(record: CallRecord) -> list[str]:
        """The claim UIDs a recorded call sent, in request order."""
        return [claim["uid"] for claim in record.request["claims"]]

    async def start_driver(self, node: Node, driver: str = GPU, *flags: str) -> DriverProcess:
        """Start the reference driver for this node and wait until the node can call it."""
        plugin_dir = self.root / f"p-{driver.split('.')[0]}"
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "kubelet_dra", "driver", "--driver-name", driver, "--node-name", self.node_name),
            *("--kubeconfig", str(self.kubeconfig), "--registry-dir", str(self.registry)),
            *("--plugin-dir", str(plugin_dir), "--cdi-root", str(self.root / "cdi"), *flags),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        process = DriverProcess(proc, plugin_dir)
        self.drivers.append(process)
        await process.wait_line("driver started")
        await node.wait_for(lambda: node.plugins.usable(driver), timeout=20)
        return process

    def pod(
        self,
        claims: dict[str, str] | None = None,
        *,
        templates: dict[str, str | None] | None = None,
        containers: Sequence[dict[str, Any]] = (),
    ) -> dict[str, Any]:
        """A pod bound to this node: ``claims`` maps pod claim name → claim name, ``templates`` pod claim
        name → the claim named in its status (``None``: intentionally not created)."""
        templates = templates or {}
        entries = [{"name": key, "resourceClaimName": name} for key, name in (claims or {}).items()]
        entries += [{"name": key, "resourceClaimTemplateName": "template"} for key in templates]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": unique("pod"), "namespace": NAMESPACE, "uid": str(uuid.uuid4())},
            "spec": {
                "nodeName": self.node_name,
                "resourceClaims": entries,
                "containers": list(containers) or [{"name": "main", "image": "busybox"}],
            },
            "status": {"resourceClaimStatuses": [{"name": k, "resourceClaimName": v} for k, v in templates.items()]},
        }

    async def claim(
        self,
        devices: Sequence[tuple[str, str, str]] | None = None,
        *,
        reserved_for: Sequence[dict[str, Any]] = (),
        owner: dict[str, Any] | None = None,
        allocate: bool = True,
        name: str | None = None,
    ) -> dict[str, Any]:
        """A ResourceClaim allocated with ``devices`` (request, driver, device) in this node's pool, reserved
        for the pods given (the store drops status on create, so status is written with a status update)."""
        devices = devices if devices is not None else [("gpu", GPU, "device-0")]
        requests = sorted({request for request, _, _ in devices}) or ["gpu"]
        metadata: dict[str, Any] = {"name": name or unique("claim")}
        if owner is not None:
            meta = owner["metadata"]
            metadata["ownerReferences"] = [
                {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"], "controller": True}
            ]
        spec = {"devices": {"requests": [{"name": r, "exactly": {"deviceClassName": "example"}} for r in requests]}}
        body = {"apiVersion": f"{RESOURCE}/v1", "kind": "ResourceClaim", "metadata": metadata, "spec": spec}
        path = api_path(RESOURCE, "v1", "resourceclaims", namespace=NAMESPACE)
        claim = await self.kube.request("POST", path, body=body)
        if not allocate:
            return claim
        results = [
            {"request": request, "driver": driver, "pool": self.node_name, "device": device}
            for request, driver, device in devices
        ]
        claim["status"] = {
            "allocation": {"devices": {"results": results}},
            "reservedFor": [
                {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
                for pod in reserved_for
            ],
        }
        return await self.kube.request("PUT", f"{path}/{claim['metadata']['name']}/status", body=claim)


@pytest.fixture
async def env(apiserver: ServerThread) -> AsyncIterator[Env]:
    """A short root dir (Unix socket paths are limited to 107 bytes) and a node name of its own."""
    root = Path(tempfile.mkdtemp(prefix="kd-", dir="/tmp"))
    kube = KubeClient.from_kubeconfig(str(apiserver.kubeconfig))
    environment = Env(root, kube, apiserver.kubeconfig)
    try:
        yield environment
    finally:
        for driver in environment.drivers:
            await driver.stop()
        kube.close()
        shutil.rmtree(root, ignore_errors=True)
