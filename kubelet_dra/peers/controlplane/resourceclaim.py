"""The resource claim controller: claims from templates, and the end of a claim's use.

It follows kube-controller-manager's: a generated claim is recorded in the pod's status, and a
claim created before a failed status write is found again by its annotation and owner, never
created twice. Reservations of pods that are gone or done are dropped, an allocation nobody
reserves any more is released, and generated claims die with their pod. On a real cluster the
cluster's own controller generates claims too: when the pod's status records its claim instead of
ours, ours is deleted (by UID: only what this controller created), so it holds no device.
"""

from __future__ import annotations

from typing import Any

from kubelet_dra.peers.controlplane.cluster import (
    RESOURCE_GROUP,
    RESOURCE_VERSION,
    Snapshot,
    claims_path,
    controller_uid,
    pod_done,
    pods_path,
    recorded_pod_claims,
)
from kubelet_dra.peers.controlplane.informer import Informer, WriteThrough
from kubelet_dra.peers.controlplane.names import POD_CLAIM_NAME_ANNOTATION, claim_generate_name
from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path
from kubelet_dra.peers.log import get_logger

log = get_logger("claim-controller")


class ClaimController:
    def __init__(self, kube: KubeClient, informer: Informer | None = None) -> None:
        """``informer``: where the answers of this controller's writes go, for the steps and passes after."""
        self._kube: KubeClient | WriteThrough = WriteThrough(kube, informer) if informer else kube
        self._created: dict[tuple[str, str], tuple[str, str, str]] = {}
        """(pod UID, pod claim) → namespace, name and UID of a claim this controller created, until the pod's
        status records a claim for that pod claim (ours, or another controller's that won the race)."""

    async def sync_pod(self, pod: dict[str, Any], snapshot: Snapshot) -> None:
        """Create the pod's missing template claims and record them in its status (one write for all)."""
        await self._drop_superseded(pod)
        if pod_done(pod) or pod["metadata"].get("deletionTimestamp"):
            return
        meta = pod["metadata"]
        recorded = recorded_pod_claims(pod)
        statuses: list[dict[str, str]] = []
        for entry in (pod.get("spec") or {}).get("resourceClaims") or []:
            template = entry.get("resourceClaimTemplateName")
            if not template or entry.get("name") in recorded:
                continue
            claim = self._existing(pod, entry["name"], snapshot) or await self._create(pod, entry["name"], template)
            statuses.append({"name": entry["name"], "resourceClaimName": claim["metadata"]["name"]})
        if statuses:  # a changed copy: the pod read is the informer's
            status = pod.get("status") or {}
            recording = {**status, "resourceClaimStatuses": [*(status.get("resourceClaimStatuses") or []), *statuses]}
            body = {**pod, "status": recording}
            await self._kube.request("PUT", pods_path(meta["namespace"], meta["name"]) + "/status", body=body)
            log.info("Recorded generated claims", pod=f"{meta['namespace']}/{meta['name']}", claims=statuses)

    async def _drop_superseded(self, pod: dict[str, Any]) -> None:
        """Delete each claim this controller created for the pod whose status now records another claim."""
        uid = pod["metadata"]["uid"]
        for entry in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            ours = self._created.pop((uid, str(entry.get("name"))), None)
            if ours is None or ours[1] == entry.get("resourceClaimName"):
                continue
            namespace, name, claim_uid = ours
            options = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": claim_uid}}
            try:
                await self._kube.request("DELETE", claims_path(namespace, name), body=options)
            except KubeApiError as err:
                if not (err.not_found or err.conflict):  # gone already, or no longer the claim we made
                    raise
                continue
            log.info(
                "Deleted a generated claim another controller superseded",
                claim=f"{namespace}/{name}",
                recorded=entry.get("resourceClaimName"),
            )

    def _existing(self, pod: dict[str, Any], pod_claim: str, snapshot: Snapshot) -> dict[str, Any] | None:
        meta = pod["metadata"]
        return next(
            (
                claim
                for claim in snapshot.claims_owned_by(meta["uid"])
                if claim["metadata"]["namespace"] == meta["namespace"]
                and (claim["metadata"].get("annotations") or {}).get(POD_CLAIM_NAME_ANNOTATION) == pod_claim
            ),
            None,
        )

    async def _create(self, pod: dict[str, Any], pod_claim: str, template_name: str) -> dict[str, Any]:
        meta = pod["metadata"]
        template = await self._kube.request(
            "GET",
            api_path(
                "resource.k8s.io", "v1", "resourceclaimtemplates", namespace=meta["namespace"], name=template_name
            ),
        )
        template_meta = (template.get("spec") or {}).get("metadata") or {}
        body = {
            "apiVersion": f"{RESOURCE_GROUP}/{RESOURCE_VERSION}",
            "kind": "ResourceClaim",
            "metadata": {
                "generateName": claim_generate_name(meta["name"], pod_claim),
                "namespace": meta["namespace"],
                "labels": template_meta.get("labels") or {},
                "annotations": {**(template_meta.get("annotations") or {}), POD_CLAIM_NAME_ANNOTATION: pod_claim},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": (template.get("spec") or {}).get("spec") or {},
        }
        claim = await self._kube.request("POST", claims_path(meta["namespace"]), body=body)
        created = claim["metadata"]
        self._created[(meta["uid"], pod_claim)] = (meta["namespace"], created["name"], created["uid"])
        log.info("Created claim", claim=f"{meta['namespace']}/{created['name']}", pod=meta["name"])
        return claim

    async def sync_claim(self, claim: dict[str, Any], snapshot: Snapshot) -> None:
        """Drop reservations of pods gone or done, release an unused allocation, delete an orphaned generated claim."""
        meta = claim["metadata"]
        owner = controller_uid(claim)
        if POD_CLAIM_NAME_ANNOTATION in (meta.get("annotations") or {}) and owner is not None:
            pod = snapshot.pod_by_uid(owner)
            if pod is None or pod_done(pod):
                try:
                    await self._kube.request("DELETE", claims_path(meta["namespace"], meta["name"]))
                except KubeApiError as err:
                    if not err.not_found:  # gone already: deleted by a pass before this one saw it go
                        raise
                    return
                log.info("Deleted generated claim of a finished pod", claim=f"{meta['namespace']}/{meta['name']}")
                return
        status = claim.get("status") or {}
        reserved = status.get("reservedFor") or []
        live = [ref for ref in reserved if ref.get("resource") != "pods" or _in_use(ref, snapshot)]
        release = status.get("allocation") is not None and not live
        if len(live) == len(reserved) and not release:
            return
        kept = {**status, "reservedFor": live}  # a changed copy: the claim read is the informer's
        if not live:
            kept.pop("reservedFor")
        if release:
            kept.pop("allocation", None)
        body = {**claim, "status": kept}
        await self._kube.request("PUT", claims_path(meta["namespace"], meta["name"]) + "/status", body=body)
        log.info(
            "Updated claim reservations",
            claim=f"{meta['namespace']}/{meta['name']}",
            reserved=len(live),
            released=release,
        )


def _in_use(reference: dict[str, Any], snapshot: Snapshot) -> bool:
    pod = snapshot.pod_by_uid(str(reference.get("uid")))
    return pod is not None and not pod_done(pod)
