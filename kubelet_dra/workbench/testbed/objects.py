"""Kubernetes objects by manifest: where each kind lives, and create-or-replace / delete / get / list.

Scenarios and checks work with manifests (``apiVersion``, ``kind``, ``metadata``), as ``kubectl``
does; this module turns them into requests. Only the kinds a DRA node deals with are known.
"""

from __future__ import annotations

from typing import Any

import attrs

from kubelet_dra.peers.errors import UsageError
from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path

RESOURCE = "resource.k8s.io"
DEFAULT_NAMESPACE = "default"


@attrs.frozen
class Kind:
    group: str
    plural: str
    namespaced: bool
    status: bool
    """Has a status subresource: status in a manifest is written with a second request."""


KINDS: dict[str, Kind] = {
    "Pod": Kind("", "pods", True, True),
    "Node": Kind("", "nodes", False, True),
    "Namespace": Kind("", "namespaces", False, True),
    "Event": Kind("", "events", True, False),
    "ConfigMap": Kind("", "configmaps", True, False),
    "ResourceSlice": Kind(RESOURCE, "resourceslices", False, False),
    "ResourceClaim": Kind(RESOURCE, "resourceclaims", True, True),
    "ResourceClaimTemplate": Kind(RESOURCE, "resourceclaimtemplates", True, False),
    "DeviceClass": Kind(RESOURCE, "deviceclasses", False, False),
}


def kind_of(kind: str) -> Kind:
    try:
        return KINDS[kind]
    except KeyError:
        raise UsageError(f"unknown kind {kind!r}", fix=f"use one of {', '.join(KINDS)}") from None


def object_path(kind: str, name: str | None = None, namespace: str | None = None, version: str = "v1") -> str:
    """The REST path of one object (``name``) or of the collection of ``kind``."""
    info = kind_of(kind)
    return api_path(
        info.group,
        version,
        info.plural,
        namespace=(namespace or DEFAULT_NAMESPACE) if info.namespaced else None,
        name=name,
    )


def manifest_path(manifest: dict[str, Any], *, name: bool = True) -> str:
    kind = str(manifest.get("kind", ""))
    version = str(manifest.get("apiVersion", "v1")).rpartition("/")[2]
    metadata = manifest.get("metadata") or {}
    return object_path(kind, metadata.get("name") if name else None, metadata.get("namespace"), version)


async def apply(kube: KubeClient, manifest: dict[str, Any]) -> dict[str, Any]:
    """Create the object, or replace it when it exists; a status in the manifest is written too."""
    status = manifest.get("status")
    try:
        stored = await kube.request("POST", manifest_path(manifest, name=False), body=manifest)
    except KubeApiError as err:
        if not err.conflict:
            raise
        current = await kube.request("GET", manifest_path(manifest))
        body = {
            **manifest,
            "metadata": {**manifest["metadata"], "resourceVersion": current["metadata"]["resourceVersion"]},
        }
        stored = await kube.request("PUT", manifest_path(manifest), body=body)
    if status and kind_of(str(manifest["kind"])).status:
        stored = await write_status(kube, {**stored, "apiVersion": manifest.get("apiVersion", "v1")}, status)
    return stored


async def write_status(kube: KubeClient, stored: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
    """Replace the status of an object read from the server (the status subresource, as controllers do)."""
    return await kube.request("PUT", f"{manifest_path(stored)}/status", body={**stored, "status": status})


async def delete(
    kube: KubeClient, kind: str, name: str, namespace: str | None = None, *, grace: int | None = None
) -> bool:
    """Delete one object; ``False`` when it did not exist."""
    query = {"gracePeriodSeconds": str(grace)} if grace is not None else None
    try:
        await kube.request("DELETE", object_path(kind, name, namespace), query=query)
    except KubeApiError as err:
        if err.not_found:
            return False
        raise
    return True


async def get(kube: KubeClient, kind: str, name: str, namespace: str | None = None) -> dict[str, Any] | None:
    """The object as the API server has it now; ``None`` when it does not exist."""
    try:
        return await kube.request("GET", object_path(kind, name, namespace))
    except KubeApiError as err:
        if err.not_found:
            return None
        raise


async def list_objects(
    kube: KubeClient, kind: str, namespace: str | None = None, *, field_selector: str = "", label_selector: str = ""
) -> list[dict[str, Any]]:
    query = {
        key: value for key, value in (("fieldSelector", field_selector), ("labelSelector", label_selector)) if value
    }
    info = kind_of(kind)
    path = api_path(info.group, "v1", info.plural, namespace=namespace if info.namespaced else None)
    return (await kube.request("GET", path, query=query)).get("items") or []
