"""The objects a DRA user writes, as manifests: a DeviceClass for a driver, claim templates, claims, pods.

One place builds them so the demo, the scenarios and the conformance checks ask for devices the
same way a user's YAML does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubelet_dra.workbench.testbed.objects import DEFAULT_NAMESPACE, RESOURCE


def device_class(driver: str, name: str | None = None) -> dict[str, Any]:
    """A DeviceClass that selects every device of ``driver`` (named after the driver by default)."""
    return {
        "apiVersion": f"{RESOURCE}/v1",
        "kind": "DeviceClass",
        "metadata": {"name": name or driver},
        "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{driver}'"}}]},
    }


def claim_spec(device_class_name: str, requests: Sequence[str] = ("device",), count: int = 1) -> dict[str, Any]:
    return {
        "devices": {
            "requests": [
                {"name": request, "exactly": {"deviceClassName": device_class_name, "count": count}}
                for request in requests
            ]
        }
    }


def claim_template(
    name: str,
    device_class_name: str,
    *,
    requests: Sequence[str] = ("device",),
    count: int = 1,
    namespace: str = DEFAULT_NAMESPACE,
) -> dict[str, Any]:
    return {
        "apiVersion": f"{RESOURCE}/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": claim_spec(device_class_name, requests, count)},
    }


def claim(
    name: str,
    device_class_name: str,
    *,
    requests: Sequence[str] = ("device",),
    count: int = 1,
    namespace: str = DEFAULT_NAMESPACE,
) -> dict[str, Any]:
    return {
        "apiVersion": f"{RESOURCE}/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": claim_spec(device_class_name, requests, count),
    }


def pod(
    name: str,
    node: str,
    *,
    claims: Mapping[str, str] | None = None,
    templates: Mapping[str, str] | None = None,
    containers: Sequence[str] = ("main",),
    namespace: str = DEFAULT_NAMESPACE,
) -> dict[str, Any]:
    """A pod bound to ``node`` whose containers all use every claim: ``claims`` maps pod claim name →
    ResourceClaim name, ``templates`` pod claim name → ResourceClaimTemplate name."""
    references = [{"name": key, "resourceClaimName": value} for key, value in (claims or {}).items()]
    references += [{"name": key, "resourceClaimTemplateName": value} for key, value in (templates or {}).items()]
    uses = [{"name": reference["name"]} for reference in references]
    resources = {"resources": {"claims": uses}} if uses else {}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "nodeName": node,
            "containers": [{"name": container, "image": "busybox", **resources} for container in containers],
            "resourceClaims": references,
        },
    }
