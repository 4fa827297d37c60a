"""Defaulting of objects on create and update, as kube-apiserver does before validation.

Only the defaults a DRA driver, the kubelet or kubectl output can observe are applied: device
request allocation mode and count, toleration operators and taint timestamps for
resource.k8s.io; the pod, container and volume basics every real Pod carries; the namespace
label, finalizer and phase; node allocatable; a CSIDriver's spec (and a Lease's fields of a feature
kube-apiserver 1.36 has off are dropped). Fields the client set are never overwritten
(except the namespace name label, which kube-apiserver always forces).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from kubelet_dra.peers.apiserver.resources import COORDINATION_GROUP, RESOURCE_GROUP, STORAGE_GROUP, ResourceType
from kubelet_dra.peers.quantity import parse_quantity

Obj = dict[str, Any]

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
NAMESPACE_FINALIZER = "kubernetes"
_QOS_RESOURCES = ("cpu", "memory")
_DEFAULT_VOLUME_MODE = 0o644  # secret, configMap, downwardAPI and projected volumes


def apply_defaults(rt: ResourceType, obj: Obj) -> None:
    """Fill defaulted fields of ``obj`` (storage version) in place; empty label and annotation maps go,
    as Go's JSON (omitempty) drops them."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        for key in ("labels", "annotations"):
            if metadata.get(key) == {}:
                del metadata[key]
    defaulter = _DEFAULTERS.get((rt.group, rt.kind))
    if defaulter is not None:
        defaulter(obj)


def _child(obj: Obj, key: str) -> Obj:
    """``obj[key]`` as an object, created when absent or null."""
    value = obj.get(key)
    if not isinstance(value, dict):
        if value is not None:
            return {}  # a malformed field is validation's business; defaulting leaves it alone
        value = obj[key] = {}
    return value


def _objects(value: Any) -> Iterable[Obj]:
    """The objects in a list field (nothing when it is absent or malformed)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _default(obj: Obj, key: str, value: Any) -> None:
    """Set ``obj[key]`` when it is absent, null or an empty string (Go's "unset")."""
    if obj.get(key) is None or obj.get(key) == "":
        obj[key] = value


# --- resource.k8s.io ---------------------------------------------------------------------


def _default_request_fields(request: Obj) -> None:
    """allocationMode ExactCount and count 1 for an ``exactly`` request or a subrequest."""
    _default(request, "allocationMode", "ExactCount")
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1
    _default_tolerations(request)


def _default_tolerations(obj: Obj) -> None:
    for toleration in _objects(obj.get("tolerations")):
        _default(toleration, "operator", "Equal")


def _default_claim_spec(spec: Obj) -> None:
    devices = spec.get("devices")
    if not isinstance(devices, dict):
        return
    for request in _objects(devices.get("requests")):
        if isinstance(request.get("exactly"), dict):
            _default_request_fields(request["exactly"])
        for subrequest in _objects(request.get("firstAvailable")):
            _default_request_fields(subrequest)


def _default_resource_claim(claim: Obj) -> None:
    if isinstance(claim.get("spec"), dict):
        _default_claim_spec(claim["spec"])
    status = claim.setdefault("status", {})  # a struct, not a pointer: Go writes it even when empty
    allocation = status.get("allocation") if isinstance(status, dict) else None
    devices = allocation.get("devices") if isinstance(allocation, dict) else None
    if isinstance(devices, dict):
        for result in _objects(devices.get("results")):
            _default_tolerations(result)


def _default_resource_claim_template(template: Obj) -> None:
    spec = template.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("metadata", {})  # a struct, not a pointer: Go writes it even when empty
        if isinstance(spec.get("spec"), dict):
            _default_claim_spec(spec["spec"])


def _default_resource_slice(resource_slice: Obj) -> None:
    spec = resource_slice.get("spec")
    if not isinstance(spec, dict):
        return
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for device in _objects(spec.get("devices")):
        for taint in _objects(device.get("taints")):
            _default(taint, "timeAdded", now)


# --- core/v1 -----------------------------------------------------------------------------


def _image_pull_policy(image: str) -> str:
    """Always for ``:latest`` or an untagged image without digest, IfNotPresent otherwise."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = last.partition(":")[2] if ":" in last else ("" if digest else "latest")
    return "Always" if tag == "latest" else "IfNotPresent"


def _default_container(container: Obj, host_network: bool) -> None:
    if isinstance(container.get("image"), str):
        _default(container, "imagePullPolicy", _image_pull_policy(container["image"]))
    _default(container, "terminationMessagePath", "/dev/termination-log")
    _default(container, "terminationMessagePolicy", "File")
    resources = _child(container, "resources")
    limits = resources.get("limits")
    if isinstance(limits, dict) and limits:
        requests = _child(resources, "requests")
        for name, quantity in limits.items():
            requests.setdefault(name, quantity)
    for port in _objects(container.get("ports")):
        _default(port, "protocol", "TCP")
        if host_network and not port.get("hostPort") and port.get("containerPort"):
            port["hostPort"] = port["containerPort"]
    for env in _objects(container.get("env")):
        value_from = env.get("valueFrom")
        if isinstance(value_from, dict) and isinstance(value_from.get("fieldRef"), dict):
            _default(value_from["fieldRef"], "apiVersion", "v1")


def _default_volume(volume: Obj) -> None:
    sources = [key for key in volume if key != "name" and volume[key] is not None]
    if not sources:
        volume["emptyDir"] = {}
    for source in ("secret", "configMap", "downwardAPI", "projected"):
        if isinstance(volume.get(source), dict):
            _default(volume[source], "defaultMode", _DEFAULT_VOLUME_MODE)
    if isinstance(volume.get("hostPath"), dict):
        _default(volume["hostPath"], "type", "")


def _parse_quantity(value: Any) -> Decimal | None:
    """A Kubernetes quantity ("500m", "1Gi", "2") as a number; None when it does not parse."""
    try:
        return parse_quantity(value)
    except ValueError:
        return None


def _qos_class(spec: Obj) -> str:
    """BestEffort, Burstable or Guaranteed from the containers' cpu and memory requests and limits."""
    containers = [*_objects(spec.get("containers")), *_objects(spec.get("initContainers"))]
    any_set = False
    guaranteed = True
    for container in containers:
        resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
        requests = resources.get("requests") if isinstance(resources.get("requests"), dict) else {}
        limits = resources.get("limits") if isinstance(resources.get("limits"), dict) else {}
        for name in _QOS_RESOURCES:
            request, limit = _parse_quantity(requests.get(name, 0)), _parse_quantity(limits.get(name, 0))
            any_set = any_set or bool(request) or bool(limit)
            guaranteed = guaranteed and bool(limit) and request == limit
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _default_pod(pod: Obj) -> None:
    spec = _child(pod, "spec")
    _default(spec, "dnsPolicy", "ClusterFirst")
    _default(spec, "restartPolicy", "Always")
    _default(spec, "terminationGracePeriodSeconds", 30)
    _default(spec, "schedulerName", "default-scheduler")
    _default(spec, "enableServiceLinks", True)
    if spec.get("securityContext") is None:
        spec["securityContext"] = {}
    host_network = spec.get("hostNetwork") is True
    for key in ("containers", "initContainers"):
        for container in _objects(spec.get(key)):
            _default_container(container, host_network)
    for volume in _objects(spec.get("volumes")):
        _default_volume(volume)
    status = _child(pod, "status")
    _default(status, "phase", "Pending")
    _default(status, "qosClass", _qos_class(spec))


def _default_namespace(namespace: Obj) -> None:
    metadata = _child(namespace, "metadata")
    if metadata.get("name"):
        _child(metadata, "labels")[NAMESPACE_NAME_LABEL] = metadata["name"]
    spec = _child(namespace, "spec")
    if spec.get("finalizers") is None:
        spec["finalizers"] = [NAMESPACE_FINALIZER]
    _default(_child(namespace, "status"), "phase", "Active")


def _default_node(node: Obj) -> None:
    status = node.get("status")
    if isinstance(status, dict) and isinstance(status.get("capacity"), dict) and status.get("allocatable") is None:
        status["allocatable"] = dict(status["capacity"])


def _default_csi_driver(driver: Obj) -> None:
    """Every pointer field of a CSIDriver's spec that kube-apiserver 1.36 defaults (the kubelet reads them)."""
    spec = _child(driver, "spec")
    for key, value in (
        ("attachRequired", True),
        ("podInfoOnMount", False),
        ("storageCapacity", False),
        ("fsGroupPolicy", "ReadWriteOnceWithFSType"),
        ("requiresRepublish", False),
        ("seLinuxMount", False),
    ):
        _default(spec, key, value)
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]


def _drop_disabled_lease_fields(lease: Obj) -> None:
    """``strategy`` and ``preferredHolder`` belong to coordinated leader election, a feature gate kube-apiserver
    1.36 has off: it drops them on every write."""
    spec = lease.get("spec")
    if isinstance(spec, dict):
        spec.pop("strategy", None)
        spec.pop("preferredHolder", None)


_DEFAULTERS: dict[tuple[str, str], Callable[[Obj], None]] = {
    (RESOURCE_GROUP, "ResourceClaim"): _default_resource_claim,
    (RESOURCE_GROUP, "ResourceClaimTemplate"): _default_resource_claim_template,
    (RESOURCE_GROUP, "ResourceSlice"): _default_resource_slice,
    ("", "Pod"): _default_pod,
    ("", "Namespace"): _default_namespace,
    ("", "Node"): _default_node,
    (STORAGE_GROUP, "CSIDriver"): _default_csi_driver,
    (COORDINATION_GROUP, "Lease"): _drop_disabled_lease_fields,
}
