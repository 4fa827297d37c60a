"""Which prepared devices each container of a pod gets: CDI IDs for the CRI, and the ≤1.30 annotations.

The kubelet's ``GetResources`` in ``pkg/kubelet/cm/dra/manager.go``.

A container names the pod's claims it uses (and a request of each, or all of them); the extended-resource
claim the scheduler made serves the containers that request a DRA-backed extended resource, through the
pod status's request mappings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from kubelet_dra.kubelet.cm.dra.claiminfo import ClaimInfo, ClaimInfoCache
from kubelet_dra.kubelet.cm.dra.claims import ClaimError, extended_claim_name, spec_claims
from kubelet_dra.peers.kube.client import object_key

DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
CDI_ANNOTATION_PREFIX = "cdi.k8s.io/"

_ZERO_QUANTITY = re.compile(r"[+-]?(0+\.?0*|\.0+)([eE][+-]?\d+)?[A-Za-z]*")


def cdi_device_ids(cache: ClaimInfoCache, pod: Mapping[str, Any], container_name: str) -> list[str]:
    """The CDI device IDs for one container of a prepared pod, in claim order (CRI ``cdi_devices``)."""
    return [
        cdi_id
        for info, request in container_claims(cache, pod, container_name)
        for cdi_id in info.cdi_device_ids(request)
    ]


def cdi_annotations(cache: ClaimInfoCache, pod: Mapping[str, Any], container_name: str) -> dict[str, str]:
    """The same devices as the ≤1.30 kubelet also passed them: ``cdi.k8s.io/<driver>_<claimUID>`` annotations.

    Each value lists the driver's CDI IDs for the container, comma-separated; drivers with none get no key.
    """
    annotations: dict[str, str] = {}
    for info, request in container_claims(cache, pod, container_name):
        for driver in info.driver_state:
            if ids := info.cdi_device_ids(request, driver=driver):
                key = f"{CDI_ANNOTATION_PREFIX}{driver}_{info.claim_uid}"
                annotations[key] = ",".join(filter(None, (annotations.get(key), *ids)))
    return annotations


def container_claims(
    cache: ClaimInfoCache, pod: Mapping[str, Any], container_name: str
) -> Iterator[tuple[ClaimInfo, str]]:
    """Each claim the container uses with the request it names ("" for all), from the pod spec and
    from the extended-resource request mappings (docs/protocol.md#dra-manager)."""
    container = _container(pod, container_name)
    namespace = str((pod.get("metadata") or {}).get("namespace", ""))
    resources = container.get("resources") or {}
    for pod_claim in spec_claims(pod):
        for used in resources.get("claims") or []:
            if used.get("name") == pod_claim.pod_claim_name:
                yield cache.get_in_use(namespace, pod_claim.claim_name), used.get("request") or ""
    if extended := extended_claim_name(pod):
        info = cache.get_in_use(namespace, extended)
        mappings = (pod.get("status") or {}).get("extendedResourceClaimStatus", {}).get("requestMappings") or []
        for resource, quantity in (resources.get("requests") or {}).items():
            if _is_zero_quantity(str(quantity)) or not is_dra_extended_resource(resource):
                continue
            for mapping in mappings:
                if mapping.get("containerName") == container_name and mapping.get("resourceName") == resource:
                    yield info, mapping.get("requestName") or ""


def _container(pod: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    spec = pod.get("spec") or {}
    containers: list[Mapping[str, Any]] = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
    for container in containers:
        if container.get("name") == name:
            return container
    raise ClaimError(f"container {name} not found in pod {object_key(pod)}")


def is_dra_extended_resource(name: str) -> bool:
    """An extended resource name (a domain outside kubernetes.io) or an implicit DeviceClass resource."""
    if name.startswith(DEVICE_CLASS_PREFIX):
        return True
    domain = name.split("/", 1)[0] if "/" in name else ""
    native = not domain or domain == "kubernetes.io" or domain.endswith(".kubernetes.io")
    return not native and not name.startswith("requests.")


def _is_zero_quantity(quantity: str) -> bool:
    return _ZERO_QUANTITY.fullmatch(quantity.strip()) is not None
