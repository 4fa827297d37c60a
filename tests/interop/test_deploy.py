"""``deploy/`` and node credentials against a real kube-apiserver 1.36: the manifests are accepted, the pod's
service account may do a node's and a driver's work and not much else, its writes reach its own simulated nodes
and what is bound to them and nothing of another node (the admission policy), and credentials that cannot do a
node's work are refused as the node starts, with each missing permission named (``test_real_cluster_node``
proves the roles and the policy enough, running a node and a driver on them; ``test_deploy_shards`` runs the
manifests as pods of a real node)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from helpers import kubelet_dra
from realk8s import REPO, Api, RealControlPlane

from kubelet_dra.kubelet.nodestatus.setters import (
    LEASE_NAMESPACE,
    NodeShape,
    lease_manifest,
    node_manifest,
    node_status,
)
from kubelet_dra.peers.kube.client import api_path
from kubelet_dra.peers.kube.events import warning_event
from kubelet_dra.workbench.testbed import manifests

DEPLOY = REPO / "deploy"
NAMESPACE = "kubelet-dra"
ACCOUNT = f"system:serviceaccount:{NAMESPACE}:kubelet-dra"
POLICY = "kubelet-dra-simulated-nodes-only"
SIMULATED = "kubelet-dra.io/simulated"
OWN = "kubelet-dra-sim-0"
"""A simulated node of the fleet, as deploy/20-nodes.yaml names and labels them."""
OTHER = "worker-1"
"""A node that is not the fleet's, with what a real kubelet has on it: its Lease, a pod bound to it, a slice."""
NODES = api_path("", "v1", "nodes")
LEASES = api_path("coordination.k8s.io", "v1", "leases", namespace=LEASE_NAMESPACE)
SLICES = api_path("resource.k8s.io", "v1", "resourceslices")
PODS = api_path("", "v1", "pods", namespace="default")
EVENTS = api_path("", "v1", "events", namespace="default")
MERGE = "application/merge-patch+json"


@pytest.fixture(scope="module")
def deployed(real_apiserver: RealControlPlane) -> RealControlPlane:
    """The Namespace, roles and admission policy applied for real (a dry run of objects in a namespace needs the
    namespace)."""
    for path in ("00-namespace.yaml", "10-rbac.yaml", "15-policy.yaml"):
        real_apiserver.kubectl("apply", "-f", str(DEPLOY / path))
    return real_apiserver


def test_the_real_api_server_accepts_every_manifest(deployed: RealControlPlane) -> None:
    result = deployed.kubectl("apply", "--dry-run=server", "-f", str(DEPLOY))
    assert "statefulset.apps/kubelet-dra created (server dry run)" in result.stdout
    assert "deviceclass.resource.k8s.io/gpu.kubelet-dra.io created (server dry run)" in result.stdout


@pytest.mark.parametrize(
    ("verb", "what", "allowed"),
    [
        ("create", "nodes", True),
        ("patch", "nodes --subresource status", True),
        ("update", "leases -n kube-node-lease", True),
        ("watch", "pods", True),
        ("create", "resourceslices.resource.k8s.io", True),
        ("patch", "nodes", False),  # labels and taints are the cluster admin's
        ("delete", "nodes", False),
        ("create", "pods", False),
        ("update", "pods", False),
        ("list", "secrets -A", False),
        ("update", "leases -n default", False),
        ("list", "resourceclaims.resource.k8s.io", False),
        ("update", "resourceclaims.resource.k8s.io --subresource status", False),
        ("create", "clusterrolebindings.rbac.authorization.k8s.io", False),
    ],
)
def test_the_pod_account_may_do_a_nodes_work_and_little_else(
    deployed: RealControlPlane, verb: str, what: str, allowed: bool
) -> None:
    result = deployed.kubectl("auth", "can-i", verb, *what.split(), "--as", ACCOUNT, check=False)
    assert result.stdout.strip() == ("yes" if allowed else "no"), result.stderr


async def test_another_nodes_identity_is_refused_with_the_fix(real_apiserver: RealControlPlane, tmp_path: Path) -> None:
    code, _, err = await kubelet_dra(
        *("run", "--node-name", "node-2", "--kubeconfig", str(real_apiserver.node_kubeconfig("node-1"))),
        *("--registry-dir", str(tmp_path / "registry")),
    )
    assert code == 2, err
    assert "these credentials are node node-1's (system:node:node-1)" in err
    assert "run with --node-name node-1, or use the kubeconfig of system:node:node-2" in err
    assert "Traceback" not in err


async def test_an_account_without_the_roles_is_refused_naming_what_it_lacks(
    deployed: RealControlPlane, tmp_path: Path
) -> None:
    account = deployed.service_account("no-roles", "kubelet-dra", tmp_path / "account")
    kubeconfig = deployed.kubeconfig_of((account / "token").read_text(), tmp_path / "kubeconfig")
    code, _, err = await kubelet_dra(
        *("run", "--node-name", "sim-9", "--kubeconfig", str(kubeconfig), "--registry-dir", str(tmp_path / "r")),
    )
    assert code == 2, err
    assert "system:serviceaccount:kubelet-dra:no-roles may not do all a node does" in err
    assert "cannot create nodes (to register its Node)" in err
    assert "cannot deletecollection resourceslices.resource.k8s.io with fieldSelector spec.nodeName=sim-9" in err
    assert "cannot update leases.coordination.k8s.io in namespace kube-node-lease" in err
    assert "deploy/10-rbac.yaml" in err
    assert "Traceback" not in err


def node(name: str, labels: dict[str, str]) -> dict[str, Any]:
    return node_manifest(name, NodeShape(labels=labels), "v1.36.2", time.time(), time.time())


def resource_slice(name: str, node_name: str | None) -> dict[str, Any]:
    """A slice of one device on ``node_name``, or on every node with ``None``."""
    where = {"nodeName": node_name} if node_name else {"allNodes": True}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": "gpu.kubelet-dra.io",
            **where,
            "pool": {"name": node_name or "everywhere", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}],
        },
    }


def done(answer: tuple[int, Any]) -> Any:
    """The answer's object, once the server said the write was done."""
    code, body = answer
    assert code in (200, 201), body
    return body


@pytest.fixture(scope="module")
def admin(deployed: RealControlPlane) -> Api:
    return Api(deployed.url, deployed.token, str(deployed.ca))


@pytest.fixture(scope="module")
def fleet_token(deployed: RealControlPlane) -> str:
    """What the fleet's pods authenticate with: a token of deploy/'s service account."""
    return deployed.kubectl("create", "token", "kubelet-dra", "-n", NAMESPACE).stdout.strip()


@pytest.fixture(scope="module")
def fleet(deployed: RealControlPlane, fleet_token: str) -> Api:
    return Api(deployed.url, fleet_token, str(deployed.ca))


@pytest.fixture(scope="module")
def own_node(fleet: Api) -> dict[str, Any]:
    """The fleet registers its simulated node, named and labelled as deploy/20-nodes.yaml does."""
    return done(fleet("POST", NODES, node(OWN, {SIMULATED: "true"})))


@pytest.fixture(scope="module")
def other_node(admin: Api) -> dict[str, dict[str, Any]]:
    """Another node's Node, Lease, bound pod and ResourceSlice, and a pod bound to no node, by their paths, as the
    admin made them."""
    return {
        f"{NODES}/{OTHER}": done(admin("POST", NODES, node(OTHER, {}))),
        f"{LEASES}/{OTHER}": done(admin("POST", LEASES, lease_manifest(OTHER, "", time.time()))),
        f"{PODS}/on-{OTHER}": done(admin("POST", PODS, manifests.pod(f"on-{OTHER}", OTHER))),
        f"{SLICES}/{OTHER}-gpu": done(admin("POST", SLICES, resource_slice(f"{OTHER}-gpu", OTHER))),
        f"{PODS}/unbound": done(admin("POST", PODS, manifests.pod("unbound", ""))),
    }


async def test_the_fleet_account_does_a_nodes_work_on_its_own_simulated_node(
    fleet: Api, admin: Api, own_node: dict[str, Any]
) -> None:
    uid = own_node["metadata"]["uid"]
    status = node_status(OWN, NodeShape(), "v1.36.2", time.time(), time.time())
    done(fleet("PATCH", f"{NODES}/{OWN}/status", {"status": status}, MERGE))
    lease = done(fleet("POST", LEASES, lease_manifest(OWN, uid, time.time())))
    done(fleet("PUT", f"{LEASES}/{OWN}", {**lease, "spec": lease_manifest(OWN, uid, time.time())["spec"]}))

    published = done(fleet("POST", SLICES, resource_slice(f"{OWN}-gpu", OWN)))
    done(fleet("PUT", f"{SLICES}/{OWN}-gpu", {**published, "spec": {**published["spec"], "devices": []}}))
    done(fleet("DELETE", f"{SLICES}/{OWN}-gpu"))
    done(fleet("POST", SLICES, resource_slice(f"{OWN}-gpu", OWN)))
    wiped = done(fleet("DELETE", f"{SLICES}?fieldSelector=spec.nodeName%3D{OWN}"))
    assert [item["metadata"]["name"] for item in wiped["items"]] == [f"{OWN}-gpu"]

    pod = done(admin("POST", PODS, manifests.pod(f"on-{OWN}", OWN)))
    done(fleet("PATCH", f"{PODS}/on-{OWN}/status", {"status": {"phase": "Running"}}, MERGE))
    done(fleet("POST", EVENTS, warning_event(pod, "Test", "x", {"host": OWN})))
    done(fleet("DELETE", f"{PODS}/on-{OWN}?gracePeriodSeconds=0"))
    assert admin("GET", f"{PODS}/on-{OWN}")[0] == 404


REFUSED = {
    "register a Node not named as a simulated one": ("POST", NODES, node("worker-2", {SIMULATED: "true"})),
    "register a simulated Node without the label": ("POST", NODES, node("kubelet-dra-sim-9", {})),
    "post another node's status": ("PATCH", f"{NODES}/{OTHER}/status", {"status": {"phase": "Running"}}),
    "label another node through its status": (
        "PATCH",
        f"{NODES}/{OTHER}/status",
        {"metadata": {"labels": {SIMULATED: "true"}}},
    ),
    "unlabel its own node through its status": ("PATCH", f"{NODES}/{OWN}/status", {"metadata": {"labels": None}}),
    "create another node's Lease": ("POST", LEASES, lease_manifest("worker-2", "", 0)),
    "renew another node's Lease": ("PUT", f"{LEASES}/{OTHER}", {"spec": lease_manifest(OTHER, "", 0)["spec"]}),
    "write the status of a pod on another node": (
        "PATCH",
        f"{PODS}/on-{OTHER}/status",
        {"status": {"phase": "Failed"}},
    ),
    "delete a pod bound to no node": ("DELETE", f"{PODS}/unbound?gracePeriodSeconds=0", None),
    "delete a pod on another node": ("DELETE", f"{PODS}/on-{OTHER}?gracePeriodSeconds=0", None),
    "publish a slice for another node": ("POST", SLICES, resource_slice("worker-2-gpu", "worker-2")),
    "publish a slice for every node": ("POST", SLICES, resource_slice("every-node-gpu", None)),
    "replace another node's slice": (
        "PUT",
        f"{SLICES}/{OTHER}-gpu",
        {"spec": {**resource_slice("x", OTHER)["spec"], "devices": []}},
    ),
    "delete another node's slice": ("DELETE", f"{SLICES}/{OTHER}-gpu", None),
    "wipe another node's slices": ("DELETE", f"{SLICES}?fieldSelector=spec.nodeName%3D{OTHER}", None),
}


@pytest.mark.parametrize("what", list(REFUSED))
def test_the_fleet_account_is_refused_on_what_is_not_its_own(
    fleet: Api, admin: Api, own_node: dict[str, Any], other_node: dict[str, dict[str, Any]], what: str
) -> None:
    method, path, body = REFUSED[what]
    if method == "PUT":  # a replacement of the object as it is, with the body's fields
        body = {**other_node[path], **body}
    code, answer = fleet(method, path, body, MERGE if method == "PATCH" else "application/json")
    assert code == 403, answer
    assert f"ValidatingAdmissionPolicy '{POLICY}'" in answer["message"]  # RBAC grants it: the policy refuses it
    for where, made in other_node.items():  # the other node's things are as they were
        code, now = admin("GET", where)
        assert code == 200, now
        assert now["metadata"]["resourceVersion"] == made["metadata"]["resourceVersion"], where
    assert done(admin("GET", f"{NODES}/{OWN}"))["metadata"]["labels"][SIMULATED] == "true"
    for made_by_none in (
        f"{NODES}/worker-2",
        f"{LEASES}/worker-2",
        f"{SLICES}/worker-2-gpu",
        f"{SLICES}/every-node-gpu",
    ):
        assert admin("GET", made_by_none)[0] == 404, made_by_none


def test_the_fleet_account_is_refused_events_from_another_node(
    fleet: Api, other_node: dict[str, dict[str, Any]]
) -> None:
    pod = other_node[f"{PODS}/on-{OTHER}"]
    code, answer = fleet("POST", EVENTS, warning_event(pod, "Test", "x", {"host": OTHER}))
    assert code == 403, answer
    assert f"ValidatingAdmissionPolicy '{POLICY}'" in answer["message"]


async def test_a_fleet_of_nodes_the_policy_refuses_stops_at_once_saying_how_to_name_them(
    deployed: RealControlPlane, fleet_token: str, tmp_path: Path
) -> None:
    kubeconfig = deployed.kubeconfig_of(fleet_token, tmp_path / "kubeconfig")
    code, _, err = await kubelet_dra(
        *("run", "--nodes", "gpu-{0..1}", "--root-dir", str(tmp_path / "nodes"), "--kubeconfig", str(kubeconfig)),
        *("--node-label", f"{SIMULATED}=true"),
        timeout=30,
    )
    assert code == 2, err
    assert "the API server refuses to register Node gpu-" in err
    assert "kubelet-dra may write only Nodes named kubelet-dra-sim-* and labelled kubelet-dra.io/simulated=true" in err
    assert "with deploy/, name it kubelet-dra-sim-* and pass --node-label kubelet-dra.io/simulated=true" in err
    assert "Traceback" not in err
    assert deployed.get("node", "gpu-0") is None
