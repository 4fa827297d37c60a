"""Driver names the cluster uses for this node that no registered driver answers to (F12, docs/protocol.md).

"DRA driver X is not registered" while the driver runs usually means two names: the one in the
driver's ResourceSlices (and so in every allocation) and the one its GetInfo registers. The
kubelet only compares them when a pod starts; the debugger compares them at once.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from kubelet_dra.peers.kube.client import KubeApiError, KubeClient
from kubelet_dra.workbench.testbed import objects

TYPO = 0.85
"""How alike two names must be to call one a typo of the other (``gpu.example.com`` and ``nic.example.com``
are 0.8 alike: two drivers, not a typo)."""


@attrs.frozen
class NameMismatch:
    driver: str
    """The name the cluster uses."""
    used_by: str
    """Where: ``ResourceSlice <name>`` or ``ResourceClaim <ns>/<name>``."""
    closest: str
    """The most similar registered name, "" when none is close."""

    @property
    def fix(self) -> str:
        if self.closest:
            return f"GetInfo registers {self.closest!r}: publish and register one and the same name"
        return "start the driver, or make its GetInfo name the one its ResourceSlices use"

    def to_json(self) -> dict[str, str]:
        return {"driver": self.driver, "usedBy": self.used_by, "closest": self.closest, "fix": self.fix}


async def unregistered_names(kube: KubeClient, node_name: str, registered: Iterable[str]) -> list[NameMismatch]:
    """Drivers named by this node's ResourceSlices, or by claims allocated from its pools, that are not registered.

    Claims are skipped when the credentials may not list them all (a kubelet's own, under the node
    authorizer). Raises ``KubeApiError`` when the API server cannot be read."""
    known = set(registered)
    slices = await objects.list_objects(kube, "ResourceSlice", field_selector=f"spec.nodeName={node_name}")
    try:
        claims = await objects.list_objects(kube, "ResourceClaim")
    except KubeApiError as err:
        if not err.forbidden:
            raise
        claims = []
    pools = {(item["spec"]["driver"], item["spec"]["pool"]["name"]) for item in slices}
    used = {f"ResourceSlice {item['metadata']['name']}": item["spec"]["driver"] for item in slices}
    for claim in claims:
        for driver in _drivers_on_node(claim, node_name, pools):
            used[f"ResourceClaim {claim['metadata'].get('namespace', '')}/{claim['metadata']['name']}"] = driver
    return [
        NameMismatch(driver, where, next(iter(difflib.get_close_matches(driver, sorted(known), 1, TYPO)), ""))
        for where, driver in sorted(used.items())
        if driver not in known
    ]


def _drivers_on_node(claim: Mapping[str, Any], node_name: str, pools: set[tuple[str, str]]) -> set[str]:
    """The drivers of a claim's allocation results that point at this node (its pools, or a pool named after it)."""
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    return {
        result["driver"]
        for result in results
        if (result.get("driver"), result.get("pool")) in pools or result.get("pool") == node_name
    }
