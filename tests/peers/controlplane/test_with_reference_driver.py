"""End to end: the reference driver publishes its ResourceSlices, the control plane allocates from them."""

from __future__ import annotations

from pathlib import Path

from cluster_support import (
    create_class,
    create_pod,
    create_template,
    devices_of,
    get_claim,
    get_pod,
    request,
    reserved_uids,
)
from helpers import eventually

from kubelet_dra.peers.apiserver.server import EmbeddedAPIServer
from kubelet_dra.peers.controlplane import ControlPlane
from kubelet_dra.peers.driver.devices import DEVICE_MODEL
from kubelet_dra.peers.driver.plugin import DriverPlugin
from kubelet_dra.peers.driver.settings import resolve
from kubelet_dra.peers.kube.client import KubeClient, api_path

DRIVER = "gpu.example.com"
NODE = "lab-node"


async def test_claims_from_a_template_get_the_drivers_devices_by_model_and_memory(
    kube: KubeClient, server: EmbeddedAPIServer, short_dir: Path
) -> None:
    kubeconfig = server.kubeconfig(short_dir / "kubeconfig")
    (short_dir / "reg").mkdir()
    await kube.request("POST", api_path("", "v1", "nodes"), body={"metadata": {"name": NODE}})
    await create_class(kube, "gpu", [f'device.driver == "{DRIVER}"'])
    selectors = [
        f'device.attributes["{DRIVER}"].model == "{DEVICE_MODEL}"',
        f'device.capacity["{DRIVER}"].memory.compareTo(quantity("8Gi")) >= 0',
        f'device.attributes["{DRIVER}"].index >= 1',
    ]
    await create_template(kube, "two-gpus", [request("gpus", "gpu", selectors, count=2)])
    settings = resolve(
        node_name=NODE,
        driver_name=DRIVER,
        registry_dir=short_dir / "reg",
        plugin_dir=short_dir / "plugin",
        cdi_root=short_dir / "cdi",
        kubeconfig=str(kubeconfig),
        devices=3,
    )
    pod = await create_pod(kube, "trainer", [{"name": "gpus", "resourceClaimTemplateName": "two-gpus"}], node=NODE)
    async with DriverPlugin(settings), ControlPlane(kube):
        name = await eventually(lambda: _claim_name(kube))
        claim = await eventually(lambda: _reserved(kube, name))
    assert reserved_uids(claim) == [pod["metadata"]["uid"]]
    assert devices_of(claim) == ["device-1", "device-2"]
    assert {result["pool"] for result in claim["status"]["allocation"]["devices"]["results"]} == {NODE}


async def _claim_name(kube: KubeClient) -> str:
    statuses = (await get_pod(kube, "trainer")).get("status", {}).get("resourceClaimStatuses") or []
    return statuses[0]["resourceClaimName"] if statuses else ""


async def _reserved(kube: KubeClient, name: str) -> dict[str, object] | None:
    claim = await get_claim(kube, name)
    return claim if reserved_uids(claim) else None
