"""The objects both controllers read, fetched in one go, and the facts they derive from them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import attrs

from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path
from kubelet_dra.peers.log import get_logger

log = get_logger("controlplane")

RESOURCE_GROUP = "resource.k8s.io"
RESOURCE_VERSION = "v1"
TERMINAL_PHASES = ("Succeeded", "Failed")


def claims_path(namespace: str | None = None, name: str | None = None) -> str:
    return api_path(RESOURCE_GROUP, RESOURCE_VERSION, "resourceclaims", namespace=namespace, name=name)


def pods_path(namespace: str | None = None, name: str | None = None) -> str:
    return api_path("", "v1", "pods", namespace=namespace, name=name)


@attrs.frozen
class Snapshot:
    """Pods, claims, slices and device classes as listed at one moment (pods first, so claims are newer)."""

    pods: tuple[dict[str, Any], ...]
    claims: tuple[dict[str, Any], ...]
    slices: tuple[dict[str, Any], ...]
    classes: dict[str, dict[str, Any]]

    def pod_by_uid(self, uid: str) -> dict[str, Any] | None:
        return next((pod for pod in self.pods if pod["metadata"].get("uid") == uid), None)

    def claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        return next(
            (c for c in self.claims if c["metadata"]["namespace"] == namespace and c["metadata"]["name"] == name),
            None,
        )


async def snapshot(kube: KubeClient) -> Snapshot:
    pods = await kube.request("GET", pods_path())
    claims = await kube.request("GET", claims_path())
    slices = await kube.request("GET", api_path(RESOURCE_GROUP, RESOURCE_VERSION, "resourceslices"))
    classes = await kube.request("GET", api_path(RESOURCE_GROUP, RESOURCE_VERSION, "deviceclasses"))
    return Snapshot(
        tuple(pods.get("items") or []),
        tuple(claims.get("items") or []),
        tuple(slices.get("items") or []),
        {item["metadata"]["name"]: item for item in classes.get("items") or []},
    )


def pod_done(pod: dict[str, Any]) -> bool:
    """Terminated, or being deleted before it ever reached a node: its claims are no longer needed."""
    terminal = (pod.get("status") or {}).get("phase") in TERMINAL_PHASES
    unbound_and_deleting = bool(pod["metadata"].get("deletionTimestamp")) and not pod_node(pod)
    return terminal or unbound_and_deleting


def pod_node(pod: dict[str, Any]) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def pod_claim_names(pod: dict[str, Any]) -> list[str]:
    """Names of the claims the pod uses that exist by now (SPEC §5.2 resolution; not-yet-created ones left out)."""
    generated = {
        entry.get("name"): entry.get("resourceClaimName")
        for entry in (pod.get("status") or {}).get("resourceClaimStatuses") or []
    }
    names: list[str] = []
    for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = entry.get("resourceClaimName") or generated.get(entry.get("name"))
        if name:
            names.append(str(name))
    return names


def recorded_pod_claims(pod: dict[str, Any]) -> set[str]:
    """Pod claim names that have an entry in ``status.resourceClaimStatuses`` (their claim was handled)."""
    return {str(entry.get("name")) for entry in (pod.get("status") or {}).get("resourceClaimStatuses") or []}


def pod_claims_created(pod: dict[str, Any]) -> bool:
    """Whether every template claim of the pod has its entry in ``status.resourceClaimStatuses`` yet."""
    recorded = recorded_pod_claims(pod)
    return all(
        entry.get("name") in recorded
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []
        if entry.get("resourceClaimTemplateName")
    )


def pod_reference(pod: dict[str, Any]) -> dict[str, str]:
    """The pod as an entry of a claim's ``status.reservedFor``."""
    return {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}


def controller_uid(obj: dict[str, Any]) -> str | None:
    owners = obj["metadata"].get("ownerReferences") or []
    return next((str(owner.get("uid")) for owner in owners if owner.get("controller")), None)


async def for_each(items: Iterable[dict[str, Any]], action: Callable[[dict[str, Any]], Awaitable[None]]) -> bool:
    """``action`` on every object; False when one failed and the pass should be repeated.

    An API error on one object (a 409 after a stale read, a rejected write) is logged and does not
    stop the others, so one bad pod cannot hold up the whole cluster.
    """
    succeeded = True
    for item in items:
        try:
            await action(item)
        except KubeApiError as err:
            succeeded = False
            meta = item.get("metadata") or {}
            log.info("Sync failed, will retry", kind=item.get("kind", ""), name=meta.get("name"), err=str(err))
    return succeeded
