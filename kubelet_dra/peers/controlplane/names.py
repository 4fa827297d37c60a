"""Names of claims generated from a pod's ResourceClaimTemplate."""

from __future__ import annotations

MAX_BASE_LENGTH = 57
"""63 characters (a label-safe name) minus the apiserver's 5 random characters and one hyphen."""

POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


def claim_generate_name(pod: str, pod_claim: str) -> str:
    """``<pod>-<podClaim>-``, or, when too long, both parts cut in proportion so neither is lost entirely.

    Cutting only the end (what the apiserver would do) would drop the pod claim name of a pod with a
    long name; the truncated form has no trailing hyphen, as upstream.
    """
    name = f"{pod}-{pod_claim}-"
    if len(name) <= MAX_BASE_LENGTH:
        return name
    total = len(name)
    return f"{pod[: len(pod) * MAX_BASE_LENGTH // total]}-{pod_claim[: len(pod_claim) * MAX_BASE_LENGTH // total]}"
