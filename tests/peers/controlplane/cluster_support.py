"""Objects the control-plane tests create, built the way users write them."""

from __future__ import annotations

from typing import Any

from kubelet_dra.peers.controlplane.cluster import claims_path, pods_path
from kubelet_dra.peers.kube.client import KubeClient, api_path

NAMESPACE = "default"
RESOURCE = "resource.k8s.io"


def slice_manifest(
    name: str,
    driver: str,
    node: str | None,
    devices: list[dict[str, Any]],
    generation: int = 1,
) -> dict[str, Any]:
    """A v1 ResourceSlice; ``node=None`` makes it reachable from every node (pool ``shared``)."""
    spec: dict[str, Any] = {
        "driver": driver,
        "pool": {"name": node or "shared", "generation": generation, "resourceSliceCount": 1},
        "devices": devices,
    }
    if node is None:
        spec["allNodes"] = True
    else:
        spec["nodeName"] = node
    return {"apiVersion": f"{RESOURCE}/v1", "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


def device(name: str, model: str = "A100", memory: str = "16Gi", shared: bool = False) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": name,
        "attributes": {"model": {"string": model}, "index": {"int": int(name.rsplit("-", 1)[-1])}},
        "capacity": {"memory": {"value": memory}},
    }
    if shared:  # each allocation consumes 1Gi, as the policy says (without one it would consume it all)
        entry["allowMultipleAllocations"] = True
        entry["capacity"]["memory"]["requestPolicy"] = {"default": "1Gi"}
    return entry


def device_class_manifest(name: str, selectors: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RESOURCE}/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": e}} for e in selectors]},
    }


def request(
    name: str, device_class: str, selectors: list[str] | None = None, count: int | None = None, mode: str = ""
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": device_class}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if count is not None:
        exactly["count"] = count
    if mode:
        exactly["allocationMode"] = mode
    return {"name": name, "exactly": exactly}


def claim_manifest(name: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": f"{RESOURCE}/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"devices": {"requests": requests}},
    }


async def create(kube: KubeClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    return await kube.request("POST", path, body=body)


async def create_slice(kube: KubeClient, body: dict[str, Any]) -> dict[str, Any]:
    return await create(kube, api_path(RESOURCE, "v1", "resourceslices"), body)


async def create_class(kube: KubeClient, name: str, selectors: list[str]) -> dict[str, Any]:
    return await create(kube, api_path(RESOURCE, "v1", "deviceclasses"), device_class_manifest(name, selectors))


async def create_template(kube: KubeClient, name: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
    body = {
        "apiVersion": f"{RESOURCE}/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"spec": {"devices": {"requests": requests}}},
    }
    return await create(kube, api_path(RESOURCE, "v1", "resourceclaimtemplates", namespace=NAMESPACE), body)


async def create_claim(kube: KubeClient, name: str, requests: list[dict[str, Any]]) -> dict[str, Any]:
    return await create(kube, claims_path(NAMESPACE), claim_manifest(name, requests))


async def create_pod(
    kube: KubeClient, name: str, claims: list[dict[str, str]], node: str | None = None
) -> dict[str, Any]:
    """A pod using ``claims`` (pod claim entries), bound to ``node`` from the start when given."""
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "image": "busybox"}],
        "resourceClaims": claims,
    }
    if node:
        spec["nodeName"] = node
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE}, "spec": spec}
    return await create(kube, pods_path(NAMESPACE), body)


async def get_pod(kube: KubeClient, name: str) -> dict[str, Any]:
    return await kube.request("GET", pods_path(NAMESPACE, name))


async def get_claim(kube: KubeClient, name: str) -> dict[str, Any]:
    return await kube.request("GET", claims_path(NAMESPACE, name))


async def list_claims(kube: KubeClient) -> list[dict[str, Any]]:
    return (await kube.request("GET", claims_path(NAMESPACE))).get("items") or []


async def pod_events(kube: KubeClient, pod: str) -> list[dict[str, Any]]:
    query = {"fieldSelector": f"involvedObject.name={pod}"}
    listed = await kube.request("GET", api_path("", "v1", "events", namespace=NAMESPACE), query=query)
    return listed.get("items") or []


def reserved_uids(claim: dict[str, Any]) -> list[str]:
    return [ref["uid"] for ref in (claim.get("status") or {}).get("reservedFor") or []]


def devices_of(claim: dict[str, Any]) -> list[str]:
    allocation = (claim.get("status") or {}).get("allocation") or {}
    return [result["device"] for result in allocation.get("devices", {}).get("results", [])]
