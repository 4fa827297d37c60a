"""What a node's credentials must allow: the table the node checks at start is the one ``deploy/`` grants, and
``--node-label`` refuses the labels a kubelet may not set on its own Node."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from helpers import kubelet_dra

from kubelet_dra.cli.nodeflags import kubelet_label
from kubelet_dra.kubelet.permissions import LEASE_NAMESPACE, node_permissions

RBAC = Path(__file__).resolve().parents[3] / "deploy" / "10-rbac.yaml"


def granted(kind: str, name: str) -> set[tuple[str, str, str, str]]:
    """(namespace, group, resource, verb) of every rule of the role ``name`` in deploy/10-rbac.yaml."""
    [role] = [
        doc for doc in yaml.safe_load_all(RBAC.read_text()) if doc["kind"] == kind and doc["metadata"]["name"] == name
    ]
    namespace = role["metadata"].get("namespace", "")
    return {
        (namespace, group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def test_deploy_grants_exactly_what_the_node_sends() -> None:
    needed = {
        (p.namespace, p.group, f"{p.resource}/{p.subresource}" if p.subresource else p.resource, p.verb)
        for p in node_permissions("sim-0")
    }
    assert granted("ClusterRole", "kubelet-dra-node") | granted("Role", "kubelet-dra-node-lease") == needed
    assert {namespace for namespace, *_ in granted("Role", "kubelet-dra-node-lease")} == {LEASE_NAMESPACE}


@pytest.mark.parametrize(
    ("key", "allowed"),
    [
        ("zone", True),
        ("example.com/gpu", True),
        ("kubernetes.io/hostname", True),
        ("topology.kubernetes.io/zone", True),
        ("node.kubernetes.io/pool", True),
        ("team.kubelet.kubernetes.io/x", True),
        ("node-restriction.kubernetes.io/trusted", False),
        ("node-role.kubernetes.io/worker", False),
        ("kubernetes.io/role", False),
        ("sig.k8s.io/x", False),
    ],
)
def test_labels_a_kubelet_may_set_on_its_node(key: str, allowed: bool) -> None:
    assert kubelet_label(key) is allowed


async def test_a_reserved_label_is_refused_before_the_node_starts(tmp_path: Path) -> None:
    code, _, err = await kubelet_dra(
        *("run", "--node-name", "n", "--registry-dir", str(tmp_path / "r"), "--kubeconfig", str(tmp_path / "k")),
        *("--node-label", "node-restriction.kubernetes.io/trusted=yes"),
    )
    assert code == 2
    assert "--node-label: a kubelet may not set the label 'node-restriction.kubernetes.io/trusted'" in err
    assert "Traceback" not in err
