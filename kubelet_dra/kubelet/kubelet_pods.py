"""``allocatedResourcesStatus``: the health of the devices each container's claims got.

The kubelet's ``UpdateAllocatedResourcesStatus`` in ``pkg/kubelet/cm/dra/manager.go``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kubelet_dra.kubelet.cm.dra import ClaimError, DRAManager
from kubelet_dra.kubelet.cm.dra.claims import spec_claims
from kubelet_dra.kubelet.cm.dra.plugin import DeviceHealth

HealthLookup = Callable[[str], list[DeviceHealth]]
"""Driver name → its devices' current health (empty when health is not followed)."""


def allocated_resources(
    manager: DRAManager, health: HealthLookup, pod: Mapping[str, Any]
) -> dict[str, list[dict[str, Any]]]:
    """Container name → one entry per claim reference of the container that has prepared devices."""
    return {
        container["name"]: entries
        for container in pod["spec"].get("containers") or []
        if (entries := _container_resources(manager, health, pod, container))
    }


def _container_resources(
    manager: DRAManager, health: HealthLookup, pod: Mapping[str, Any], container: Mapping[str, Any]
) -> list[dict[str, Any]]:
    namespace = pod["metadata"]["namespace"]
    try:
        claim_names = {claim.pod_claim_name: claim.claim_name for claim in spec_claims(pod)}
    except ClaimError:  # a claim name that cannot be resolved has no prepared devices to report
        return []
    entries = []
    for used in (container.get("resources") or {}).get("claims") or []:
        pod_claim, request = used.get("name", ""), used.get("request") or ""
        info = manager.cache.get(namespace, claim_names.get(pod_claim, ""))
        if info is None:
            continue
        resources: dict[str, dict[str, Any]] = {}
        base_request = request.split("/")[0]
        for driver, devices in info.driver_state.items():
            known_health = {device.key: device for device in health(driver)}
            for device in devices:
                if base_request and base_request not in device.request_names:
                    continue
                resource_id = (
                    device.cdi_device_ids[0]
                    if device.cdi_device_ids
                    else f"{driver}/{device.pool_name}/{device.device_name}"
                )
                known = known_health.get(f"{device.pool_name}/{device.device_name}")
                entry = {"resourceID": resource_id, "health": str(known.health) if known else "Unknown"}
                if known is not None and known.message:
                    entry["message"] = known.message
                resources.setdefault(resource_id, entry)
        if resources:
            name = f"claim:{pod_claim}/{request}" if request else f"claim:{pod_claim}"
            entries.append({"name": name, "resources": list(resources.values())})
    return entries
