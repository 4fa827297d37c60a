"""The objects both controllers read, fetched in one go, and the facts they derive from them."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

import attrs

from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path
from kubelet_dra.peers.log import get_logger

log = get_logger("controlplane")

RESOURCE_GROUP = "resource.k8s.io"
RESOURCE_VERSION = "v1"
TERMINAL_PHASES = ("Succeeded", "Failed")
CONCURRENT_WRITES = 16
"""Objects synced at once in one step of a pass: each waits mostly for the server, and a thousand pods synced one
after another wait a thousand round trips."""


def claims_path(namespace: str | None = None, name: str | None = None) -> str:
    return api_path(RESOURCE_GROUP, RESOURCE_VERSION, "resourceclaims", namespace=namespace, name=name)


def pods_path(namespace: str | None = None, name: str | None = None) -> str:
    return api_path("", "v1", "pods", namespace=namespace, name=name)


@attrs.frozen
class Snapshot:
    """Pods, claims, slices and device classes as listed at one moment (pods first, so claims are newer), with the
    lookups a pass makes for every pod and claim indexed once, so a pass over a thousand pods stays linear."""

    pods: tuple[dict[str, Any], ...]
    claims: tuple[dict[str, Any], ...]
    slices: tuple[dict[str, Any], ...]
    classes: dict[str, dict[str, Any]]
    _pods_by_uid: dict[str, dict[str, Any]] = attrs.field(init=False)
    _claims_by_key: dict[tuple[str, str], dict[str, Any]] = attrs.field(init=False)
    _claims_by_owner: dict[str, list[dict[str, Any]]] = attrs.field(init=False)
    _pools: dict[tuple[str, str], list[int]] = attrs.field(init=False)
    _pools_by_node: dict[str, set[tuple[str, str]]] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        by_owner: dict[str, list[dict[str, Any]]] = {}
        for claim in self.claims:
            if (owner := controller_uid(claim)) is not None:
                by_owner.setdefault(owner, []).append(claim)
        pools: dict[tuple[str, str], list[int]] = {}
        by_node: dict[str, set[tuple[str, str]]] = {}
        for index, item in enumerate(self.slices):
            spec = item.get("spec") or {}
            pool = (str(spec.get("driver", "")), str((spec.get("pool") or {}).get("name", "")))
            pools.setdefault(pool, []).append(index)
            by_node.setdefault("" if spec.get("allNodes") else str(spec.get("nodeName") or "-"), set()).add(pool)
        object.__setattr__(self, "_pods_by_uid", {pod["metadata"].get("uid"): pod for pod in self.pods})
        keys = {(c["metadata"]["namespace"], c["metadata"]["name"]): c for c in self.claims}
        object.__setattr__(self, "_claims_by_key", keys)
        object.__setattr__(self, "_claims_by_owner", by_owner)
        object.__setattr__(self, "_pools", pools)
        object.__setattr__(self, "_pools_by_node", by_node)

    def pod_by_uid(self, uid: str) -> dict[str, Any] | None:
        return self._pods_by_uid.get(uid)

    def claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._claims_by_key.get((namespace, name))

    def claims_owned_by(self, uid: str) -> list[dict[str, Any]]:
        """The claims whose controller is the object with ``uid``."""
        return self._claims_by_owner.get(uid, [])

    def slices_for(self, node: str) -> list[dict[str, Any]]:
        """Every slice of each pool that has a slice on ``node`` or for all nodes: all the allocator needs to place
        devices there (a pool's generations and counters are its own), without the thousand other nodes' slices; in
        the order listed, which decides the devices tried first."""
        pools = self._pools_by_node.get(node, set()) | self._pools_by_node.get("", set())
        return [self.slices[index] for index in sorted(index for pool in pools for index in self._pools[pool])]


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
    """Names of the claims the pod uses that exist by now (docs/protocol.md#claim-names; not created yet: left out)."""
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


async def for_each(
    items: Iterable[dict[str, Any]],
    action: Callable[[dict[str, Any]], Awaitable[None]],
    *,
    concurrency: int = 1,
) -> bool:
    """``action`` on every object, up to ``concurrency`` at once; False when one failed and the pass should be repeated.

    An API error on one object (a 409 after a stale read, a rejected write) is logged and does not
    stop the others, so one bad pod cannot hold up the whole cluster.
    """
    slots = asyncio.Semaphore(concurrency)

    async def one(item: dict[str, Any]) -> bool:
        async with slots:
            try:
                await action(item)
            except KubeApiError as err:
                meta = item.get("metadata") or {}
                log.info("Sync failed, will retry", kind=item.get("kind", ""), name=meta.get("name"), err=str(err))
                return False
        return True

    return all(await asyncio.gather(*(one(item) for item in items)))
