"""The Node object and status a kubelet reports, and its Lease, as plain manifests."""

from __future__ import annotations

import datetime
import platform
import uuid
from collections.abc import Mapping
from typing import Any

import attrs

from kubelet_dra import __version__

HEARTBEAT_PERIOD = 10.0
"""The kubelet's ``nodeStatusUpdateFrequency`` and Lease renew interval (a quarter of its 40 s duration)."""
STATUS_REPORT_PERIOD = 300.0
"""The kubelet's ``nodeStatusReportFrequency``: where Leases are the heartbeat, an unchanged status is posted this
often (a changed one at once)."""
LEASE_DURATION_SECONDS = 40
LEASE_NAMESPACE = "kube-node-lease"
CONDITIONS = (
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
)
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


@attrs.frozen
class NodeShape:
    """What the node offers and how it is labelled: what a scheduler filters and scores on."""

    cpu: str = "8"
    memory: str = "32Gi"
    pods: str = "110"
    labels: Mapping[str, str] = attrs.field(factory=dict)
    taints: tuple[Mapping[str, str], ...] = ()
    """``{"key", "value", "effect"}`` each, as in ``spec.taints``."""


def timestamp(moment: float) -> str:
    """A metav1.Time: RFC 3339 in UTC, whole seconds."""
    return datetime.datetime.fromtimestamp(int(moment), datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro_timestamp(moment: float) -> str:
    """A metav1.MicroTime, as Lease renewals carry it."""
    return datetime.datetime.fromtimestamp(moment, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def node_manifest(name: str, shape: NodeShape, version: str, now: float, since: float) -> dict[str, Any]:
    """The Node a kubelet registers: labels, taints and its first status."""
    labels = {
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": _architecture(),
        **shape.labels,
    }
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": node_status(name, shape, version, now, since),
    }
    if shape.taints:
        manifest["spec"] = {"taints": [dict(taint) for taint in shape.taints]}
    return manifest


def node_status(name: str, shape: NodeShape, version: str, now: float, since: float) -> dict[str, Any]:
    """The status a kubelet posts: resources, conditions heartbeating at ``now`` (true ``since``), addresses,
    and what it runs (``version``: the kubelet release whose DRA behaviour the node emulates)."""
    resources = {"cpu": shape.cpu, "memory": shape.memory, "pods": shape.pods}
    machine = uuid.uuid5(uuid.NAMESPACE_DNS, f"kubelet-dra/{name}").hex
    heartbeat, transition = timestamp(now), timestamp(since)
    return {
        "capacity": resources,
        "allocatable": resources,
        "conditions": [
            {
                "type": kind,
                "status": value,
                "reason": reason,
                "message": message,
                "lastHeartbeatTime": heartbeat,
                "lastTransitionTime": transition,
            }
            for kind, value, reason, message in CONDITIONS
        ],
        "addresses": [{"type": "InternalIP", "address": "127.0.0.1"}, {"type": "Hostname", "address": name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": machine,
            "systemUUID": machine,
            "bootID": machine,
            "kernelVersion": platform.release(),
            "osImage": "kubelet-dra",
            "containerRuntimeVersion": f"kubelet-dra://{__version__}",
            "kubeletVersion": version,
            "operatingSystem": "linux",
            "architecture": _architecture(),
        },
    }


def lease_manifest(name: str, node_uid: str, now: float) -> dict[str, Any]:
    """The node's Lease in ``kube-node-lease``, renewed at ``now`` and owned by its Node."""
    metadata: dict[str, Any] = {"name": name, "namespace": LEASE_NAMESPACE}
    if node_uid:
        metadata["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": name, "uid": node_uid}]
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": metadata,
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": LEASE_DURATION_SECONDS,
            "renewTime": micro_timestamp(now),
        },
    }


def _architecture() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "amd64", "aarch64": "arm64"}.get(machine, machine)
