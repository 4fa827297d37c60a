"""What a node identity may write, as a kubelet writes: the embedded server in node-restricted mode and a real
kube-apiserver 1.36 (Node authorizer, NodeRestriction admission) given the same requests by ``system:node:node-2``.

Its own Node, node status, Lease and CSINode, Events, the status and deletion of pods bound to it are allowed; the
same writes for another node are refused with the same code, reason and message.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from realk8s import Api, RealControlPlane

from kubelet_dra.workbench.testbed.serverthread import ServerThread

NODE = "node-2"
"""A node identity of the session's real kube-apiserver that no other interop test writes with."""
LEASES = "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases"
CSINODES = "/apis/storage.k8s.io/v1/csinodes"
PODS = "/api/v1/namespaces/default/pods"
SMP = "application/strategic-merge-patch+json"


@pytest.fixture(scope="module")
def identities(real_apiserver: RealControlPlane) -> Iterator[dict[str, dict[str, Api]]]:
    directory = Path(tempfile.mkdtemp(prefix="kd-nw-", dir="/tmp"))
    embedded = ServerThread(directory, node_restricted=True).start()
    try:
        node_kubeconfig = yaml.safe_load(embedded.node_kubeconfig(NODE).read_text())
        real_node_kubeconfig = yaml.safe_load(real_apiserver.node_kubeconfig(NODE).read_text())
        ca = str(embedded.server.ca_cert_path)
        yield {
            "embedded": {
                "admin": Api(embedded.url, embedded.server.admin_token, ca),
                "node": Api(embedded.url, node_kubeconfig["users"][0]["user"]["token"], ca),
            },
            "real": {
                "admin": Api(real_apiserver.url, real_apiserver.token, str(real_apiserver.ca)),
                "node": Api(
                    real_apiserver.url, real_node_kubeconfig["users"][0]["user"]["token"], str(real_apiserver.ca)
                ),
            },
        }
    finally:
        embedded.stop()
        shutil.rmtree(directory, ignore_errors=True)


def outcome(answer: tuple[int, Any]) -> tuple[Any, ...]:
    """What authorization decided: the code and the object's name, or the whole refusal."""
    code, body = answer
    if code < 400:
        return code, body.get("kind"), body.get("metadata", {}).get("name")
    return code, body.get("reason"), body.get("message"), body.get("details")


def node(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


def lease(name: str, namespace: str = "kube-node-lease") -> dict[str, Any]:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": 40},
    }


def csinode(name: str) -> dict[str, Any]:
    return {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "metadata": {"name": name}, "spec": {"drivers": []}}


def pod(name: str, node_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "busybox"}]},
    }


def kubelet_writes(admin: Api, kubelet: Api, suffix: str) -> list[tuple[Any, ...]]:
    other = f"other-{suffix}"
    for path, body in (
        ("/api/v1/nodes", node(other)),
        (LEASES.format(ns="kube-node-lease"), lease(other)),
        (CSINODES, csinode(other)),
        (PODS, pod(f"own-{suffix}", NODE)),
        (PODS, pod(f"foreign-{suffix}", other)),
    ):
        assert admin("POST", path, body)[0] == 201
    status = {"status": {"conditions": [{"type": "Ready", "status": "False", "reason": "Testing"}]}}
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"event-{suffix}", "namespace": "default"},
        "involvedObject": {"kind": "Node", "name": NODE},
        "reason": "Starting",
        "message": "Starting kubelet.",
        "type": "Normal",
    }
    answers = [
        kubelet("POST", "/api/v1/nodes", node(NODE)),
        kubelet("POST", "/api/v1/nodes", node(f"stranger-{suffix}")),
        kubelet("PATCH", f"/api/v1/nodes/{NODE}/status", status, SMP),
        kubelet("PATCH", f"/api/v1/nodes/{other}/status", status, SMP),
        kubelet("POST", LEASES.format(ns="kube-node-lease"), lease(NODE)),
        kubelet("POST", LEASES.format(ns="kube-node-lease"), lease(f"stranger-{suffix}")),
        kubelet("PUT", LEASES.format(ns="kube-node-lease") + f"/{other}", lease(other)),
        kubelet("POST", LEASES.format(ns="default"), lease(NODE, "default")),
        kubelet("POST", CSINODES, csinode(NODE)),
        kubelet("POST", CSINODES, csinode(f"stranger-{suffix}")),
        kubelet("POST", "/api/v1/namespaces/default/events", event),
        kubelet("PATCH", f"{PODS}/own-{suffix}/status", {"status": {"message": "syncing"}}, SMP),
        kubelet("PATCH", f"{PODS}/foreign-{suffix}/status", {"status": {"message": "syncing"}}, SMP),
        kubelet("DELETE", f"{PODS}/foreign-{suffix}"),
        kubelet("DELETE", f"{PODS}/own-{suffix}"),
    ]
    for path in (f"/api/v1/nodes/{NODE}", LEASES.format(ns="kube-node-lease") + f"/{NODE}", f"{CSINODES}/{NODE}"):
        admin("DELETE", path)
    return [outcome(answer) for answer in answers]


def test_a_node_identity_writes_what_its_kubelet_writes_and_nothing_for_another_node(
    identities: dict[str, dict[str, Api]],
):
    suffix = uuid.uuid4().hex[:6]
    answers = {name: kubelet_writes(apis["admin"], apis["node"], suffix) for name, apis in identities.items()}
    assert answers["embedded"] == answers["real"]
    assert [answer[0] for answer in answers["real"]] == [
        *(201, 403, 200, 403, 201, 403, 403, 403, 201, 403, 201, 200, 403, 403, 200)
    ]
