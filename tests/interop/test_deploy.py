"""``deploy/`` and node credentials against a real kube-apiserver 1.36: the manifests are accepted, the pod's
service account may do a node's and a driver's work and not much else, and credentials that cannot do a node's
work are refused as the node starts, with each missing permission named (``test_real_cluster_node`` proves
the roles enough, running a node and a driver on them; ``test_deploy_shards`` runs the manifests as pods of a
real node)."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import kubelet_dra
from realk8s import REPO, RealControlPlane

DEPLOY = REPO / "deploy"
ACCOUNT = "system:serviceaccount:kubelet-dra:kubelet-dra"


@pytest.fixture(scope="module")
def deployed(real_apiserver: RealControlPlane) -> RealControlPlane:
    """The Namespace and roles applied for real (a dry run of objects in a namespace needs the namespace)."""
    for path in ("00-namespace.yaml", "10-rbac.yaml"):
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
