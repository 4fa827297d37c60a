"""Our allocator against the real kube-scheduler 1.36: the same slices and claims, the same allocations.

A real control plane with its scheduler gets a node and one pool: a shared NIC (consumable capacity
with a range policy, a valid-values policy and a capacity without policy), GPU partitions sharing a
counter set, and a shared partition beside an exclusive one on a second counter set. Pods whose claims
exercise rounding, running out, backtracking, counters consumed once per shared device and constraints
are scheduled one after the other; our allocator is given the same slices and claims in the same
order. Every allocation (devices, consumedCapacity, whether a shareID is a UUID, the node selector, what
cannot be allocated) must be the real scheduler's, and our refusals must say why.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from realk8s import RealControlPlane, start_control_plane, stop_control_plane

from kubelet_dra.peers.controlplane.allocator import Unsatisfiable, allocate
from kubelet_dra.peers.controlplane.sharing import Usage

DRIVER = "share.example.com"
NODE = "node-a"
NODE_OBJECT = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": NODE, "labels": {"kubernetes.io/hostname": NODE}},
    "status": {
        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}],
    },
}
DEVICE_CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": DRIVER},
    "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{DRIVER}'"}}]},
}


def pool_slice(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    pool = {"name": NODE, "generation": 1, "resourceSliceCount": 2}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {"driver": DRIVER, "nodeName": NODE, "pool": pool, **spec},
    }


def device(name: str, kind: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "attributes": {"kind": {"string": kind}}, **fields}


def consumes(counter_set: str, **counters: str) -> dict[str, Any]:
    return {
        "consumesCounters": [{"counterSet": counter_set, "counters": {k: {"value": v} for k, v in counters.items()}}]
    }


NIC_CAPACITY = {
    "bandwidth": {
        "value": "10G",
        "requestPolicy": {"default": "1G", "validRange": {"min": "1G", "max": "10G", "step": "1G"}},
    },
    "queues": {"value": "8", "requestPolicy": {"default": "2", "validValues": ["1", "2", "4"]}},
    "lanes": {"value": "4"},
}
SLOT_CAPACITY = {"slots": {"value": "5", "requestPolicy": {"default": "1", "validRange": {"min": "1"}}}}
SLICES = [
    pool_slice(
        "counters",
        {
            "sharedCounters": [
                {"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}},
                {"name": "link", "counters": {"bw": {"value": "10"}}},
            ]
        },
    ),
    pool_slice(
        "devices",
        {
            "devices": [
                device("nic-0", "nic", allowMultipleAllocations=True, capacity=NIC_CAPACITY),
                device("gpu-0-full", "part", **consumes("gpu-0", memory="40Gi")),
                device("gpu-0-half-a", "part", **consumes("gpu-0", memory="20Gi")),
                device("gpu-0-half-b", "part", **consumes("gpu-0", memory="20Gi")),
                device(
                    "s-0", "slot", allowMultipleAllocations=True, capacity=SLOT_CAPACITY, **consumes("link", bw="6")
                ),
                device("x-0", "own", **consumes("link", bw="6")),
            ]
        },
    ),
]


def want(name: str, kind: str, count: int = 1, **capacity: str) -> dict[str, Any]:
    selector = f"device.attributes['{DRIVER}'].kind == '{kind}'"
    exactly: dict[str, Any] = {"deviceClassName": DRIVER, "selectors": [{"cel": {"expression": selector}}]}
    if count != 1:
        exactly["count"] = count
    if capacity:
        exactly["capacity"] = {"requests": capacity}
    return {"name": name, "exactly": exactly}


CLAIMS: list[tuple[str, list[dict[str, Any]], list[dict[str, Any]], str]] = [
    ("nic-a", [want("r", "nic", bandwidth="2500M", queues="3", lanes="1")], [], ""),
    ("nic-b", [want("r", "nic", lanes="2")], [], ""),
    ("nic-c", [want("r", "nic", bandwidth="9G", lanes="1")], [], "capacity bandwidth has 6G of 10G left, 9G needed"),
    ("nic-d", [want("r", "nic", count=2, lanes="1")], [], "needs 2 device(s), 1 of 1 matching devices"),
    ("nic-e", [want("a", "nic", lanes="500m", queues="1"), want("b", "nic", lanes="500m", queues="1")], [], ""),
    ("nic-f", [want("r", "nic", queues="5")], [], "queues 5 is above every valid value"),
    ("gpu-pair", [want("r", "part", count=2)], [], ""),
    ("gpu-more", [want("r", "part")], [], "counter memory of gpu-0 has 0 left, 40Gi needed"),
    ("slot-a", [want("r", "slot")], [], ""),
    ("slot-b", [want("r", "slot", slots="1500m")], [], ""),
    ("own", [want("r", "own")], [], "x-0: counter bw of link has 4 left, 6 needed"),
    ("slot-pair", [want("a", "slot"), want("b", "slot")], [{"matchAttribute": f"{DRIVER}/kind"}], ""),
    ("slot-full", [want("r", "slot")], [], "s-0: capacity slots has 500m of 5 left, 1 needed"),
]
"""In this order, each seeing what the ones before it were given; the last field is what our refusal
must say (empty: the real scheduler allocates it)."""


def claim(name: str, requests: list[dict[str, Any]], constraints: list[dict[str, Any]]) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": requests}
    if constraints:
        devices["constraints"] = constraints
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": devices},
    }


def pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{name}", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "r"}]}}],
            "resourceClaims": [{"name": "r", "resourceClaimName": name}],
        },
    }


class Kubectl:
    def __init__(self, plane: RealControlPlane) -> None:
        self.kubeconfig = str(plane.kubeconfig)

    def __call__(self, *args: str, stdin: str = "") -> str:
        result = subprocess.run(
            ["kubectl", "--kubeconfig", self.kubeconfig, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return result.stdout

    def apply(self, *documents: dict[str, Any]) -> None:
        self("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(documents)}))

    def get(self, kind: str, name: str) -> dict[str, Any]:
        return json.loads(self("get", kind, name, "-n", "default", "-o", "json"))


@pytest.fixture(scope="module")
def scheduler(interop_bin: Path) -> Iterator[Kubectl]:
    """A real control plane of its own with kube-scheduler; the node is ready and untainted."""
    directory = Path(tempfile.mkdtemp(prefix="kd-sched-", dir="/tmp"))
    plane = start_control_plane(directory, "scheduler")
    try:
        kubectl = Kubectl(plane)
        kubectl.apply(NODE_OBJECT, DEVICE_CLASS, *SLICES)
        kubectl("patch", "node", NODE, "--type=json", "-p", '[{"op":"remove","path":"/spec/taints"}]')
        yield kubectl
    finally:
        stop_control_plane(directory)
        shutil.rmtree(directory, ignore_errors=True)


def real_allocation(kubectl: Kubectl, name: str) -> dict[str, Any] | str:
    """The real scheduler's allocation for the claim, or its reason for leaving the pod unscheduled."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        allocation = kubectl.get("resourceclaim", name).get("status", {}).get("allocation")
        if allocation:
            return allocation
        conditions = kubectl.get("pod", f"pod-{name}").get("status", {}).get("conditions", [])
        if any(c.get("reason") == "Unschedulable" for c in conditions):
            return "unschedulable"
        time.sleep(0.5)
    pytest.fail(f"the real scheduler neither allocated {name} nor gave up within 30 s")


def comparable(allocation: dict[str, Any] | str) -> dict[str, Any] | str:
    """The allocation without its timestamp (ours writes none), each shareID replaced by whether it is a UUID."""
    if isinstance(allocation, str):
        return allocation
    results = [
        {**r, "shareID": bool(uuid.UUID(r["shareID"]))} if "shareID" in r else r
        for r in allocation["devices"]["results"]
    ]
    return {"devices": {**allocation["devices"], "results": results}, "nodeSelector": allocation.get("nodeSelector")}


def test_our_allocations_are_the_real_schedulers(scheduler: Kubectl):
    ours: dict[str, dict[str, Any] | str] = {}
    theirs: dict[str, dict[str, Any] | str] = {}
    allocated: list[dict[str, Any]] = []
    for name, requests, constraints, refusal in CLAIMS:
        manifest = claim(name, requests, constraints)
        scheduler.apply(manifest, pod(name))
        theirs[name] = comparable(real_allocation(scheduler, name))
        try:
            allocation = allocate(
                manifest, node=NODE, slices=SLICES, classes={DRIVER: DEVICE_CLASS}, in_use=Usage.of(allocated)
            )
        except Unsatisfiable as refused:
            assert refusal and refusal in str(refused), f"{name}: {refused}"
            ours[name] = "unschedulable"
            continue
        allocated.append({"status": {"allocation": allocation.to_status()}})
        ours[name] = comparable(allocation.to_status())
    assert ours == theirs
    assert [name for name, *_, refusal in CLAIMS if refusal] == [n for n, a in theirs.items() if a == "unschedulable"]
