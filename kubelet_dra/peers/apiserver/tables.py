"""Server-side printing: ``meta.k8s.io`` Tables for ``kubectl get``.

kubectl asks for ``as=Table`` and prints the server's columns as they come, so the columns
here are what users see: NAME and AGE for every kind, plus the columns kube-apiserver shows
for the kinds that matter here (NODE/DRIVER/POOL for ResourceSlices, STATE for claims,
READY/STATUS for pods, and those of the kinds a kubelet uses: Services, Leases, CSINodes...).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from kubelet_dra.peers.apiserver.resources import (
    COORDINATION_GROUP,
    NODE_GROUP,
    RESOURCE_GROUP,
    STORAGE_GROUP,
    ResourceType,
)
from kubelet_dra.peers.apiserver.status import ApiError

Cell = Callable[[dict[str, Any], datetime.datetime], Any]
INCLUDE_OBJECT = ("None", "Metadata", "Object")


@attrs.frozen
class Column:
    name: str
    cell: Cell
    type: str = "string"
    format: str = ""
    description: str = ""
    priority: int = 0

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        }


def human_duration(seconds: float) -> str:
    """An age the way kubectl shows it: 45s, 3m20s, 5h, 12d, 2y3d; coarser as it grows."""
    if seconds < -1:
        return "<invalid>"
    total = max(int(seconds), 0)
    minutes, hours, days = total // 60, total // 3600, total // 86400
    if total < 120:
        return f"{total}s"
    if minutes < 10:
        return f"{minutes}m{total % 60}s" if total % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 192:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if days < 730:
        return f"{days}d"
    years = days // 365
    if years < 8:
        return f"{years}y{days % 365}d" if days % 365 else f"{years}y"
    return f"{years}y"


def parse_time(value: str | None) -> datetime.datetime | None:
    if not value:
        return None
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def since(value: str | None, now: datetime.datetime) -> str:
    moment = parse_time(value)
    return "<unknown>" if moment is None else human_duration((now - moment).total_seconds())


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("spec") or {}


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("status") or {}


NAME = Column(
    "Name",
    lambda obj, now: _meta(obj).get("name", ""),
    format="name",
    description="Name must be unique within a namespace.",
)
AGE = Column(
    "Age",
    lambda obj, now: since(_meta(obj).get("creationTimestamp"), now),
    description="CreationTimestamp is a timestamp representing the server time when this object was created.",
)


def _pod_ready(obj: dict[str, Any], now: datetime.datetime) -> str:
    statuses = _status(obj).get("containerStatuses") or []
    ready = sum(1 for container in statuses if container.get("ready"))
    return f"{ready}/{len(_spec(obj).get('containers') or [])}"


def _pod_status(obj: dict[str, Any], now: datetime.datetime) -> str:
    if _meta(obj).get("deletionTimestamp"):
        return "Terminating"
    status = _status(obj)
    for container in status.get("containerStatuses") or []:
        state = container.get("state") or {}
        reason = (state.get("waiting") or {}).get("reason") or (state.get("terminated") or {}).get("reason")
        if reason:
            return reason
    return status.get("reason") or status.get("phase") or "Pending"


def _pod_restarts(obj: dict[str, Any], now: datetime.datetime) -> int:
    return sum(int(container.get("restartCount") or 0) for container in _status(obj).get("containerStatuses") or [])


def _node_status(obj: dict[str, Any], now: datetime.datetime) -> str:
    conditions = {c.get("type"): c.get("status") for c in _status(obj).get("conditions") or []}
    ready = {"True": "Ready", "False": "NotReady"}.get(conditions.get("Ready") or "", "Unknown")
    return f"{ready},SchedulingDisabled" if _spec(obj).get("unschedulable") else ready


def _node_roles(obj: dict[str, Any], now: datetime.datetime) -> str:
    prefix = "node-role.kubernetes.io/"
    roles = sorted(key.removeprefix(prefix) for key in _meta(obj).get("labels") or {} if key.startswith(prefix))
    return ",".join(roles) or "<none>"


def _claim_state(obj: dict[str, Any], now: datetime.datetime) -> str:
    status = _status(obj)
    states = [
        label
        for label, present in (
            ("allocated", status.get("allocation")),
            ("reserved", status.get("reservedFor")),
            ("deleted", _meta(obj).get("deletionTimestamp")),
        )
        if present
    ]
    return ",".join(states) or "pending"


def _event_object(obj: dict[str, Any], now: datetime.datetime) -> str:
    involved = obj.get("involvedObject") or {}
    return f"{str(involved.get('kind', '')).lower()}/{involved.get('name', '')}"


def _event_last_seen(obj: dict[str, Any], now: datetime.datetime) -> str:
    return since(obj.get("lastTimestamp") or obj.get("eventTime") or _meta(obj).get("creationTimestamp"), now)


def _joined(values: Any, empty: str) -> str:
    return ",".join(str(value) for value in values) if isinstance(values, list) and values else empty


def _service_external_ip(obj: dict[str, Any], now: datetime.datetime) -> str:
    spec = _spec(obj)
    external = spec.get("externalIPs") or []
    if spec.get("type") == "ExternalName":
        return str(spec.get("externalName") or "<none>")
    if spec.get("type") == "LoadBalancer":
        ingress = (_status(obj).get("loadBalancer") or {}).get("ingress") or []
        addresses = [entry.get("ip") or entry.get("hostname") for entry in ingress if isinstance(entry, dict)]
        return _joined([*filter(None, addresses), *external], "<pending>")
    return _joined(external, "<none>")


def _port(port: dict[str, Any]) -> str:
    """``80/TCP``, or ``80:30080/TCP`` with a node port, as kubectl's service printer writes it."""
    node_port = f":{port['nodePort']}" if port.get("nodePort") else ""
    return f"{port.get('port')}{node_port}/{port.get('protocol') or 'TCP'}"


def _service_ports(obj: dict[str, Any], now: datetime.datetime) -> str:
    return _joined([_port(port) for port in _spec(obj).get("ports") or [] if isinstance(port, dict)], "<none>")


def _service_selector(obj: dict[str, Any], now: datetime.datetime) -> str:
    selector = _spec(obj).get("selector") or {}
    return _joined([f"{key}={selector[key]}" for key in sorted(selector)], "<none>")


def _field(*path: str) -> Cell:
    def cell(obj: dict[str, Any], now: datetime.datetime) -> Any:
        value: Any = obj
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return "" if value is None else value

    return cell


_COLUMNS: dict[tuple[str, str], tuple[Column, ...]] = {
    ("", "pods"): (
        NAME,
        Column("Ready", _pod_ready, description="The number of containers that are ready."),
        Column("Status", _pod_status, description="The aggregate state of the containers in this pod."),
        Column("Restarts", _pod_restarts, type="integer", description="The number of times the containers restarted."),
        AGE,
        Column("IP", _field("status", "podIP"), priority=1, description="IP address allocated to the pod."),
        Column("Node", _field("spec", "nodeName"), priority=1, description="Name of the node the pod is bound to."),
    ),
    ("", "nodes"): (
        NAME,
        Column("Status", _node_status, description="The status of the node."),
        Column("Roles", _node_roles, description="The roles of the node."),
        AGE,
        Column("Version", _field("status", "nodeInfo", "kubeletVersion"), description="Kubelet version."),
    ),
    ("", "namespaces"): (
        NAME,
        Column("Status", _field("status", "phase"), description="The status of the namespace."),
        AGE,
    ),
    ("", "configmaps"): (
        NAME,
        Column(
            "Data",
            lambda obj, now: len(obj.get("data") or {}) + len(obj.get("binaryData") or {}),
            type="integer",
            description="Number of keys in the config map.",
        ),
        AGE,
    ),
    ("", "events"): (
        Column("Last Seen", _event_last_seen, description="Time since the event was last seen."),
        Column("Type", _field("type"), description="Type of this event (Normal, Warning)."),
        Column("Reason", _field("reason"), description="Why the event was emitted."),
        Column("Object", _event_object, description="The object this event is about."),
        Column("Message", _field("message"), description="A description of the event."),
        Column("Name", _field("metadata", "name"), format="name", priority=1, description="Name of the event."),
    ),
    ("", "services"): (
        NAME,
        Column("Type", _field("spec", "type"), description="How the Service is exposed."),
        Column(
            "Cluster-IP",
            lambda obj, now: (_spec(obj).get("clusterIPs") or [_spec(obj).get("clusterIP") or "<none>"])[0],
            description="The IP address of the service.",
        ),
        Column("External-IP", _service_external_ip, description="The addresses outside the cluster."),
        Column("Port(s)", _service_ports, description="The list of ports that are exposed by this service."),
        AGE,
        Column("Selector", _service_selector, priority=1, description="The pods this service routes to."),
    ),
    (COORDINATION_GROUP, "leases"): (
        NAME,
        Column("Holder", _field("spec", "holderIdentity"), description="The identity of the holder of the lease."),
        AGE,
    ),
    (STORAGE_GROUP, "csinodes"): (
        NAME,
        Column(
            "Drivers",
            lambda obj, now: len(_spec(obj).get("drivers") or []),
            type="integer",
            description="The number of CSI drivers registered on the node.",
        ),
        AGE,
    ),
    (STORAGE_GROUP, "csidrivers"): (
        NAME,
        *(
            Column(title, lambda obj, now, key=key: bool(_spec(obj).get(key)), type="boolean", description=text)
            for title, key, text in (
                ("AttachRequired", "attachRequired", "Whether the driver needs an attach operation."),
                ("PodInfoOnMount", "podInfoOnMount", "Whether the driver gets pod information on mount."),
                ("StorageCapacity", "storageCapacity", "Whether scheduling considers its storage capacity."),
            )
        ),
        Column(
            "TokenRequests",
            lambda obj, now: _joined(
                [request.get("audience", "") for request in _spec(obj).get("tokenRequests") or []], "<unset>"
            ),
            description="The audiences of the service account tokens the driver gets.",
        ),
        Column(
            "RequiresRepublish",
            lambda obj, now: bool(_spec(obj).get("requiresRepublish")),
            type="boolean",
            description="Whether NodePublishVolume is called periodically.",
        ),
        Column(
            "Modes",
            lambda obj, now: _joined(_spec(obj).get("volumeLifecycleModes"), "<none>"),
            description="The kinds of volumes the driver supports.",
        ),
        AGE,
    ),
    (NODE_GROUP, "runtimeclasses"): (
        NAME,
        Column("Handler", _field("handler"), description=""),
        AGE,
    ),
    (RESOURCE_GROUP, "resourceslices"): (
        NAME,
        Column("Node", _field("spec", "nodeName"), description="The node the devices of this slice are local to."),
        Column("Driver", _field("spec", "driver"), description="The DRA driver that published this slice."),
        Column("Pool", _field("spec", "pool", "name"), description="The pool this slice belongs to."),
        AGE,
    ),
    (RESOURCE_GROUP, "resourceclaims"): (
        NAME,
        Column("State", _claim_state, description="A summary of the claim's allocation and reservation."),
        AGE,
    ),
}


def columns(rt: ResourceType) -> tuple[Column, ...]:
    return _COLUMNS.get((rt.group, rt.plural), (NAME, AGE))


def parse_include_object(value: str | None) -> str:
    """``?includeObject=``: what each row carries; kube's default is the object's metadata."""
    if not value:
        return "Metadata"
    if value not in INCLUDE_OBJECT:
        raise ApiError(400, "BadRequest", f"includeObject must be one of {', '.join(INCLUDE_OBJECT)}")
    return value


def partial_metadata(obj: dict[str, Any], meta_api_version: str) -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": meta_api_version, "metadata": _meta(obj)}


def table(
    rt: ResourceType,
    objects: Sequence[dict[str, Any]],
    *,
    meta_api_version: str,
    list_meta: dict[str, Any],
    include_object: str,
    now: datetime.datetime,
) -> dict[str, Any]:
    """A Table of ``objects`` (already at the requested version), one row each."""
    cols = columns(rt)
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": [column.cell(obj, now) for column in cols]}
        if include_object == "Object":
            row["object"] = obj
        elif include_object == "Metadata":
            row["object"] = partial_metadata(obj, meta_api_version)
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": meta_api_version,
        "metadata": list_meta,
        "columnDefinitions": [column.definition() for column in cols],
        "rows": rows,
    }
