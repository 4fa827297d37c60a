"""What a ResourceClaim asks of this driver: its allocated devices and their opaque configuration.

The kubelet sends only namespace, name and UID; like every helper-based driver, this one reads the
claim from the API server and refuses the whole call when it is missing, unallocated or replaced,
with the helper's exact messages (docs/protocol.md#helper-defaults).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from kubelet_dra.peers.driver.rpc import CallFailed
from kubelet_dra.peers.errors import KubeletDRAError
from kubelet_dra.peers.kube.client import KubeApiError
from kubelet_dra.peers.kube.resource import ResourceAPI

FROM_CLASS = "FromClass"
FROM_CLAIM = "FromClaim"
ENV_PREFIX = {FROM_CLASS: "admin", FROM_CLAIM: "user"}
"""Opaque parameters become ``admin_<key>`` (set by the cluster admin's DeviceClass) or ``user_<key>``."""


class ClaimFailed(KubeletDRAError):
    """This claim cannot be prepared; the others of the call still can (a per-claim ``error``)."""


@attrs.frozen
class ClaimRef:
    """A claim as the kubelet names it in a request."""

    namespace: str
    uid: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"

    def matches(self, name_or_uid: str) -> bool:
        return name_or_uid in (self.name, self.uid)


@attrs.frozen
class AllocatedDevice:
    """One allocation result of the claim that names this driver."""

    request: str
    pool: str
    device: str
    admin_access: bool = False
    share_id: str | None = None

    @property
    def base_request(self) -> str:
        """The request name without a ``/subrequest`` suffix, as the kubelet expects it."""
        return self.request.split("/", 1)[0]


@attrs.frozen
class OpaqueConfig:
    source: str
    requests: tuple[str, ...]
    parameters: Any

    def applies_to(self, device: AllocatedDevice) -> bool:
        return not self.requests or device.request in self.requests or device.base_request in self.requests

    def env(self) -> list[str]:
        if not isinstance(self.parameters, dict):
            raise ClaimFailed(
                f"opaque parameters from {self.source} must be a JSON object, got {json.dumps(self.parameters)}"
            )
        prefix = ENV_PREFIX[self.source]
        return [f"{prefix}_{key}={_env_value(value)}" for key, value in self.parameters.items()]


def _env_value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


async def fetch_claim(resources: ResourceAPI, ref: ClaimRef) -> dict[str, Any]:
    """The claim from the API server; ``CallFailed`` (the whole call) when it cannot be used."""
    try:
        claim = await resources.get_claim(ref.namespace, ref.name)
    except KubeApiError as err:
        raise CallFailed(f"get resource claims: retrieve claim {ref}: {err.message}") from err
    if not (claim.get("status") or {}).get("allocation"):
        raise CallFailed(f"get resource claims: claim {ref} not allocated")
    if claim.get("metadata", {}).get("uid") != ref.uid:
        raise CallFailed(f"get resource claims: claim {ref} got replaced")
    return claim


def allocated_devices(claim: dict[str, Any], driver_name: str) -> list[AllocatedDevice]:
    results = claim["status"]["allocation"].get("devices", {}).get("results") or []
    return [
        AllocatedDevice(
            request=result.get("request", ""),
            pool=result.get("pool", ""),
            device=result.get("device", ""),
            admin_access=bool(result.get("adminAccess")),
            share_id=result.get("shareID"),
        )
        for result in results
        if result.get("driver") == driver_name
    ]


async def opaque_configs(
    claim: dict[str, Any], driver_name: str, get_class: Callable[[str], Awaitable[dict[str, Any]]]
) -> list[OpaqueConfig]:
    """This driver's opaque configuration for the claim, class entries first so the user's win.

    The scheduler copies the DeviceClass and claim configuration into the allocation; when an
    allocator did not, the same list is rebuilt from the claim's spec and its DeviceClasses.
    """
    recorded = claim["status"]["allocation"].get("devices", {}).get("config")
    if recorded:
        entries = [(entry.get("source", FROM_CLAIM), entry) for entry in recorded]
    else:
        classes: dict[str, dict[str, Any]] = {}
        entries = []
        for request, class_name in _request_classes(claim):
            if class_name not in classes:
                classes[class_name] = await _device_class(get_class, class_name)
            class_config = (classes[class_name].get("spec") or {}).get("config") or []
            entries += [(FROM_CLASS, {**entry, "requests": [request]}) for entry in class_config]
        entries += [(FROM_CLAIM, entry) for entry in claim.get("spec", {}).get("devices", {}).get("config") or []]
    configs = [
        OpaqueConfig(source, tuple(entry.get("requests") or ()), entry["opaque"].get("parameters"))
        for source, entry in entries
        if (entry.get("opaque") or {}).get("driver") == driver_name
    ]
    return sorted(configs, key=lambda config: config.source != FROM_CLASS)


async def _device_class(get_class: Callable[[str], Awaitable[dict[str, Any]]], name: str) -> dict[str, Any]:
    """The DeviceClass, or an empty one when it was deleted since the allocation or when the driver may not read
    it: under a node's identity (the Node authorizer grants no DeviceClass reads) the allocation is all there is,
    and kube-scheduler copies any class configuration into it."""
    try:
        return await get_class(name)
    except KubeApiError as err:
        if err.not_found or err.forbidden:
            return {}
        raise ClaimFailed(f"get DeviceClass {name}: {err.message}") from err


def _request_classes(claim: dict[str, Any]) -> list[tuple[str, str]]:
    """(request name, DeviceClass name) pairs: v1 ``exactly`` and ``firstAvailable``, or v1beta1's flat form."""
    pairs: list[tuple[str, str]] = []
    for request in claim.get("spec", {}).get("devices", {}).get("requests") or []:
        name = request.get("name", "")
        exact = request.get("exactly") or request
        if exact.get("deviceClassName"):
            pairs.append((name, exact["deviceClassName"]))
        pairs += [
            (f"{name}/{sub.get('name', '')}", sub["deviceClassName"])
            for sub in request.get("firstAvailable") or []
            if sub.get("deviceClassName")
        ]
    return pairs
