"""What a scenario leaves in a real cluster, taken away before the next one starts.

The embedded API server goes with its scenario; a cluster by kubeconfig stays. A scenario's pods
are bound to its node by name, so the next scenario's node (the same name, a new kubelet) would
find them and run them as its own, and its ``createPod`` would find the old pod in place of a new
one. So once the steps are over: the pods bound to the node go at once (grace 0: no kubelet is left
to finish them), then the claims they used, then the objects the scenario staged.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kubelet_dra.peers.controlplane.cluster import pod_claim_names
from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.workbench.testbed import objects


async def leave_cluster_clean(kube: KubeClient, node_name: str, staged: Iterable[dict[str, Any]]) -> list[str]:
    """Delete the node's pods, their claims and the ``staged`` objects; the kind/name of each one deleted."""
    deleted: list[str] = []
    pods = await objects.list_objects(kube, "Pod", field_selector=f"spec.nodeName={node_name}")
    for pod in pods:
        meta = pod["metadata"]
        if await objects.delete(kube, "Pod", meta["name"], meta["namespace"], grace=0):
            deleted.append(f"Pod/{meta['name']}")
        for claim in pod_claim_names(pod):
            if await objects.delete(kube, "ResourceClaim", claim, meta["namespace"]):
                deleted.append(f"ResourceClaim/{claim}")
    for manifest in reversed(list(staged)):
        meta = manifest["metadata"]
        if await objects.delete(kube, str(manifest["kind"]), meta["name"], meta.get("namespace")):
            deleted.append(f"{manifest['kind']}/{meta['name']}")
    return deleted
