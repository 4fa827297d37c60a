"""Which ResourceClaims a pod uses, by name, and whether it may use them (docs/protocol.md#claim-names).

Pods and claims are the API server's JSON documents. Every error text is the kubelet's own, so a
message seen on a pod here reads exactly like one from a real node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from kubelet_dra.peers.errors import KubeletError
from kubelet_dra.peers.gotext import go_quote
from kubelet_dra.peers.kube.client import object_key


class ClaimError(KubeletError):
    """A pod's claims cannot be used as they are; the text is the kubelet's."""


@attrs.frozen
class PodClaim:
    """One claim a pod uses: its entry name in the pod (``""`` for the extended-resource claim) and claim name."""

    pod_claim_name: str
    claim_name: str
    check_owner: bool
    """The claim was generated from a template for this pod, so the pod must be its controller."""


def pod_claims(pod: Mapping[str, Any]) -> list[PodClaim]:
    """Every claim the pod uses: those of its spec, then the extended-resource claim."""
    claims = spec_claims(pod)
    if extended := extended_claim_name(pod):
        claims.append(PodClaim("", extended, check_owner=False))
    return claims


def spec_claims(pod: Mapping[str, Any]) -> list[PodClaim]:
    """The claims of ``pod.spec.resourceClaims`` in order.

    Template claims whose status names no claim (not created on purpose) are left out; template
    claims without any status entry, and entries with no source at all, raise ``ClaimError``.
    """
    resolved = (_resolve(pod, entry) for entry in (pod.get("spec") or {}).get("resourceClaims") or [])
    return [claim for claim in resolved if claim is not None]


def extended_claim_name(pod: Mapping[str, Any]) -> str:
    """The claim the scheduler made for DRA-backed extended resources, or ``""``."""
    status = (pod.get("status") or {}).get("extendedResourceClaimStatus") or {}
    return str(status.get("resourceClaimName") or "")


def _resolve(pod: Mapping[str, Any], entry: Mapping[str, Any]) -> PodClaim | None:
    name = str(entry.get("name", ""))
    if entry.get("resourceClaimName") is not None:
        return PodClaim(name, str(entry["resourceClaimName"]), check_owner=False)
    if entry.get("resourceClaimTemplateName") is not None:
        for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []:
            if status.get("name") == name:
                claim_name = status.get("resourceClaimName")
                return PodClaim(name, str(claim_name), check_owner=True) if claim_name is not None else None
        raise ClaimError(f'pod "{object_key(pod)}": ResourceClaim not created yet')
    raise ClaimError(
        f'pod "{object_key(pod)}", spec.resourceClaim {go_quote(name)}: none of the supported fields are set'
    )


def check_owner(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> None:
    """A claim made from a template must belong to this pod: same namespace, the pod as its controller."""
    pod_meta, claim_meta = pod.get("metadata") or {}, claim.get("metadata") or {}
    controller = next((ref for ref in claim_meta.get("ownerReferences") or [] if ref.get("controller")), None)
    if claim_meta.get("namespace") != pod_meta.get("namespace") or (controller or {}).get("uid") != pod_meta.get("uid"):
        raise ClaimError(
            f"ResourceClaim {claim_meta.get('namespace', '')}/{claim_meta.get('name', '')}"
            f" was not created for Pod {object_key(pod)} (Pod is not owner)"
        )


def check_reserved(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> None:
    """The scheduler must have reserved the claim for this pod (matched by UID) before the node uses it."""
    pod_meta, claim_meta = pod.get("metadata") or {}, claim.get("metadata") or {}
    reserved = (claim.get("status") or {}).get("reservedFor") or []
    if not any(ref.get("uid") == pod_meta.get("uid") for ref in reserved):
        raise ClaimError(
            f"pod {pod_meta.get('name', '')} ({pod_meta.get('uid', '')}) is not allowed to use ResourceClaim"
            f" {claim_meta.get('name', '')} ({claim_meta.get('uid', '')})"
        )
