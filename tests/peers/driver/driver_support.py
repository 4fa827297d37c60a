"""Shared pieces of the reference-driver tests: an API server thread, cluster objects, gRPC calls."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc

from kubelet_dra.peers.api import dra_v1_pb2 as v1
from kubelet_dra.peers.api import pluginregistration_pb2 as reg
from kubelet_dra.peers.api.convert import to_service
from kubelet_dra.peers.api.services import DRA_V1, REGISTRATION, Service
from kubelet_dra.peers.driver.knobs import Faults
from kubelet_dra.peers.driver.plugin import DriverPlugin
from kubelet_dra.peers.driver.settings import DriverSettings, resolve
from kubelet_dra.peers.kube.client import KubeClient, api_path
from kubelet_dra.workbench.testbed.serverthread import ServerThread

RESOURCE = "resource.k8s.io"
NAMESPACE = "default"
REPUBLISH_DELAY = 0.3


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def create_node(kube: KubeClient, name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}}
    return await kube.request("POST", api_path("", "v1", "nodes"), body=body)


async def create_device_class(kube: KubeClient, name: str, config: list[dict[str, Any]] | None = None) -> None:
    body = {
        "apiVersion": f"{RESOURCE}/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"config": config or []},
    }
    await kube.request("POST", api_path(RESOURCE, "v1", "deviceclasses"), body=body)


def opaque(driver: str, parameters: Any, requests: list[str] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"opaque": {"driver": driver, "parameters": parameters}}
    if requests:
        entry["requests"] = requests
    return entry


async def create_claim(
    kube: KubeClient,
    *,
    driver: str,
    pool: str,
    devices: tuple[str, ...] = ("device-0",),
    name: str | None = None,
    device_class: str = "example",
    config: list[dict[str, Any]] | None = None,
    allocation_config: list[dict[str, Any]] | None = None,
    admin_access: bool = False,
    allocate: bool = True,
    other_driver_results: int = 0,
    requests: tuple[str, ...] = ("req",),
) -> dict[str, Any]:
    """A ResourceClaim whose devices all serve its first request; allocated unless ``allocate`` is False."""
    name = name or unique("claim")
    spec: dict[str, Any] = {
        "devices": {"requests": [{"name": r, "exactly": {"deviceClassName": device_class}} for r in requests]}
    }
    if config:
        spec["devices"]["config"] = config
    body = {"apiVersion": f"{RESOURCE}/v1", "kind": "ResourceClaim", "metadata": {"name": name}, "spec": spec}
    claims = api_path(RESOURCE, "v1", "resourceclaims", namespace=NAMESPACE)
    claim = await kube.request("POST", claims, body=body)
    if not allocate:
        return claim
    results = [
        {
            "request": "req",
            "driver": driver,
            "pool": pool,
            "device": device,
            **({"adminAccess": True} if admin_access else {}),
        }
        for device in devices
    ]
    results += [
        {"request": "req", "driver": "other.example.com", "pool": pool, "device": f"other-{i}"}
        for i in range(other_driver_results)
    ]
    allocation: dict[str, Any] = {"devices": {"results": results}}
    if allocation_config:
        allocation["devices"]["config"] = allocation_config
    claim["status"] = {"allocation": allocation}
    return await kube.request("PUT", f"{claims}/{name}/status", body=claim)


def claim_ref(claim: dict[str, Any]) -> v1.Claim:
    meta = claim["metadata"]
    return v1.Claim(namespace=meta["namespace"], uid=meta["uid"], name=meta["name"])


async def list_slices(kube: KubeClient, driver: str) -> list[dict[str, Any]]:
    listed = await kube.request(
        "GET", api_path(RESOURCE, "v1", "resourceslices"), query={"fieldSelector": f"spec.driver={driver}"}
    )
    return listed.get("items") or []


async def wait_slices(kube: KubeClient, driver: str, count: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
    """The driver's slices once there are exactly ``count`` of them (whatever there is on timeout)."""
    deadline = time.monotonic() + timeout
    while len(items := await list_slices(kube, driver)) != count and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return items


@contextlib.asynccontextmanager
async def channel(path: Path | str) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(f"unix://{path}") as opened:
        yield opened


async def get_info(path: Path | str, timeout: float = 1.0) -> reg.PluginInfo:
    async with channel(path) as opened:
        return await REGISTRATION.stub(opened).GetInfo(reg.InfoRequest(), timeout=timeout)


async def notify(path: Path | str, registered: bool, error: str = "") -> reg.RegistrationStatusResponse:
    async with channel(path) as opened:
        status = reg.RegistrationStatus(plugin_registered=registered, error=error)
        return await REGISTRATION.stub(opened).NotifyRegistrationStatus(status, timeout=5)


async def prepare(
    path: Path | str, claims: list[v1.Claim], service: Service = DRA_V1, timeout: float = 10.0
) -> v1.NodePrepareResourcesResponse:
    """NodePrepareResources through ``service``'s stub; the answer converted to v1 for easy checking."""
    async with channel(path) as opened:
        request = to_service(v1.NodePrepareResourcesRequest(claims=claims), service)
        response = await service.stub(opened).NodePrepareResources(request, timeout=timeout)
        return to_service(response, DRA_V1)


async def unprepare(
    path: Path | str, claims: list[v1.Claim], service: Service = DRA_V1, timeout: float = 10.0
) -> v1.NodeUnprepareResourcesResponse:
    async with channel(path) as opened:
        request = to_service(v1.NodeUnprepareResourcesRequest(claims=claims), service)
        response = await service.stub(opened).NodeUnprepareResources(request, timeout=timeout)
        return to_service(response, DRA_V1)


class Env:
    """One test's node: directories, API server, node object; starts drivers in-process or as processes."""

    def __init__(self, root: Path, apiserver: ServerThread, node: str) -> None:
        self.root = root
        self.registry_dir = root / "reg"
        self.cdi_root = root / "cdi"
        self.registry_dir.mkdir()
        self.apiserver = apiserver
        self.node = node
        self.driver = f"{node}.example.com"

    def plugin_dir(self, driver: str | None) -> Path:
        return self.root / f"p-{(driver or 'config')[:20]}"

    def settings(self, driver: str | None = "", node: str = "", **values: Any) -> DriverSettings:
        """Settings for a driver on this node (or ``node``); ``driver=None`` passes no name (the config's applies)."""
        name = self.driver if driver == "" else driver
        return resolve(
            node_name=node or self.node,
            driver_name=name,
            registry_dir=self.registry_dir,
            plugin_dir=self.plugin_dir(name),
            cdi_root=self.cdi_root,
            kubeconfig=str(self.apiserver.kubeconfig),
            republish_delay=values.pop("republish_delay", REPUBLISH_DELAY),
            **values,
        )

    @contextlib.asynccontextmanager
    async def driver_plugin(
        self, knobs: dict[str, str] | None = None, driver: str | None = "", **values: Any
    ) -> AsyncIterator[DriverPlugin]:
        async with DriverPlugin(self.settings(driver, **values), faults=Faults(knobs or {})) as plugin:
            yield plugin

    def process(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        """``kubelet-dra driver`` as a separate process, logs on stderr."""
        command = [sys.executable, "-m", "kubelet_dra", "driver", *args]
        return subprocess.Popen(
            command,
            env={**os.environ, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "kubelet_dra", *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
