"""The scheduler's DRA part for pods already bound to a node: allocate their claims and reserve them.

A claim that is allocated already only gains the pod in ``reservedFor`` (if the allocation can
serve the pod's node); an unallocated one gets devices on that node. When no devices fit, the
pod stays pending and gets one Warning Event per distinct reason, like the scheduler's
``FailedScheduling``.

In a cluster a kubelet first sees a pod when the scheduler binds it, after its claims are
reserved. Here pods are created bound, so a kubelet (the real one and the simulated one alike) has
already tried the pod ("ResourceClaim not created yet") and tries again only at its pod resync,
a minute later, or when the pod changes: once every claim of a pod is reserved, the pod gets the
:data:`CLAIMS_RESERVED` annotation, the change binding would be.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kubelet_dra.peers.controlplane.allocator import Unsatisfiable, allocate
from kubelet_dra.peers.controlplane.cluster import (
    CONCURRENT_WRITES,
    Snapshot,
    claims_path,
    for_each,
    pod_claim_names,
    pod_claims_created,
    pod_done,
    pod_node,
    pod_reference,
    pods_path,
)
from kubelet_dra.peers.controlplane.informer import Informer, WriteThrough
from kubelet_dra.peers.controlplane.sharing import Usage
from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.peers.kube.events import PodEventReporter
from kubelet_dra.peers.log import get_logger

log = get_logger("allocator")

COMPONENT = "kubelet-dra-controlplane"
FAILED_REASON = "FailedScheduling"
CLAIMS_RESERVED = "kubelet-dra.dev/claims-reserved"
"""The annotation a pod gets once all its claims are reserved: a kubelet syncs the changed pod at once."""


class Scheduler:
    def __init__(self, kube: KubeClient, informer: Informer | None = None) -> None:
        """``informer``: where the answers of this scheduler's writes go (the devices it gave are in use at once)."""
        self._kube: KubeClient | WriteThrough = WriteThrough(kube, informer) if informer else kube
        self._events = PodEventReporter(kube, {"component": COMPONENT})

    async def sync(self, snapshot: Snapshot) -> bool:
        """Every pod in turn, each seeing the devices the ones before it were given; False if one must be retried.

        The devices are chosen pod after pod, the writes then go out for many pods at once: a pod's choice counts
        in ``in_use`` as soon as it is made, so the next pod never gets the same device while the writes wait."""
        in_use = Usage.of(snapshot.claims)
        plans: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []

        async def plan(pod: dict[str, Any]) -> None:
            if (claims := await self.plan_pod(pod, snapshot, in_use)) is not None:
                plans.append((pod, claims))

        planned = await for_each(snapshot.pods, plan)
        written = await for_each_plan(plans, self.commit)
        live = {pod["metadata"]["uid"] for pod in snapshot.pods}
        self._events.retain(live)
        return planned and written

    async def plan_pod(self, pod: dict[str, Any], snapshot: Snapshot, in_use: Usage) -> list[dict[str, Any]] | None:
        """The bound pod's claims with their allocation and reservation to write, all or none (None: nothing to
        write); ``in_use`` grows with every allocation chosen (capacity consumed and counters used included).

        All claims are planned before any is written, so a pod that cannot get everything holds no
        devices while it waits.
        """
        node = pod_node(pod)
        if not node or pod_done(pod) or pod["metadata"].get("deletionTimestamp") or not pod_claims_created(pod):
            return None
        meta = pod["metadata"]
        planned: list[dict[str, Any]] = []
        allocated: list[dict[str, Any]] = []
        # the claims this pass allocates; those allocated before are counted in ``in_use`` already
        taken = in_use.copy()
        for name in pod_claim_names(pod):
            claim = snapshot.claim(meta["namespace"], name)
            if claim is None:
                await self._report(pod, f"waiting for ResourceClaim {meta['namespace']}/{name} to be created")
                return None
            status = claim.get("status") or {}
            if any(ref.get("uid") == meta["uid"] for ref in status.get("reservedFor") or []):
                continue
            allocation = status.get("allocation")
            newly = allocation is None
            if allocation is None:
                try:
                    allocation = allocate(
                        claim, node=node, slices=snapshot.slices_for(node), classes=snapshot.classes, in_use=taken
                    ).to_status()
                except Unsatisfiable as err:
                    await self._report(pod, f"cannot allocate ResourceClaim {name}: {err}")
                    return None
            elif not _serves(allocation, node):
                await self._report(pod, f"ResourceClaim {name} is allocated to another node")
                return None
            reserved = [*(status.get("reservedFor") or []), pod_reference(pod)]
            claim = {**claim, "status": {**status, "allocation": allocation, "reservedFor": reserved}}  # a copy
            if newly:
                taken.add(claim)
                allocated.append(claim)
            planned.append(claim)
        for claim in allocated:
            in_use.add(claim)
        return planned or None

    async def commit(self, pod: dict[str, Any], claims: list[dict[str, Any]]) -> None:
        """Write the planned claims' allocation and reservation, then mark the pod (its claims are reserved)."""
        meta = pod["metadata"]
        node = pod_node(pod)
        for claim in claims:
            name = claim["metadata"]["name"]
            await self._kube.request("PUT", claims_path(meta["namespace"], name) + "/status", body=claim)
            log.info("Reserved claim", claim=f"{meta['namespace']}/{name}", pod=meta["name"], node=node)
        await mark_claims_reserved(self._kube, meta["namespace"], meta["name"])
        self._events.forget(meta["uid"])

    async def _report(self, pod: dict[str, Any], message: str) -> None:
        """One Warning Event per pod and distinct message, so a retry loop does not flood the namespace."""
        if await self._events.report(pod, FAILED_REASON, message):
            meta = pod["metadata"]
            log.warning("Pod cannot run", pod=f"{meta['namespace']}/{meta['name']}", reason=message)


async def for_each_plan(
    plans: list[tuple[dict[str, Any], list[dict[str, Any]]]],
    commit: Callable[[dict[str, Any], list[dict[str, Any]]], Awaitable[None]],
) -> bool:
    """``commit`` every pod's plan, many at once; False when one failed (its devices are chosen again next pass)."""
    by_uid = {pod["metadata"]["uid"]: claims for pod, claims in plans}
    pods = [pod for pod, _ in plans]
    return await for_each(pods, lambda pod: commit(pod, by_uid[pod["metadata"]["uid"]]), concurrency=CONCURRENT_WRITES)


async def mark_claims_reserved(kube: KubeClient | WriteThrough, namespace: str, name: str) -> None:
    """Annotate the pod whose claims are now all reserved: the change a cluster's binding would be, so that any
    kubelet (which retries a failed prepare only at its pod resync or on a change of the pod) syncs it at once."""
    body = {"metadata": {"annotations": {CLAIMS_RESERVED: "true"}}}
    await kube.request("PATCH", pods_path(namespace, name), body=body, content_type="application/merge-patch+json")


def _serves(allocation: dict[str, Any], node: str) -> bool:
    """Whether an allocation's node selector admits ``node`` (by name: the only form this allocator writes)."""
    terms = (allocation.get("nodeSelector") or {}).get("nodeSelectorTerms")
    if not terms:
        return True
    return any(
        field.get("key") == "metadata.name" and field.get("operator") == "In" and node in (field.get("values") or [])
        for term in terms
        for field in term.get("matchFields") or []
    )
