"""What a node's credentials must allow: the table the node checks at start is the one ``deploy/`` grants, every
write it grants is under deploy/'s admission policy, which tells the fleet's nodes as deploy/ names and labels them,
and ``--node-label`` refuses the labels a kubelet may not set on its own Node."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from helpers import kubelet_dra

from kubelet_dra.cli.nodeflags import kubelet_label
from kubelet_dra.kubelet.permissions import LEASE_NAMESPACE, SIMULATED_LABEL, SIMULATED_NODE_PREFIX, node_permissions
from kubelet_dra.workbench.fleet.nodenames import expand

DEPLOY = Path(__file__).resolve().parents[3] / "deploy"
RBAC = DEPLOY / "10-rbac.yaml"
WRITES = {"create", "update", "patch", "delete", "deletecollection"}


def manifest(path: str, kind: str) -> dict:
    [document] = [doc for doc in yaml.safe_load_all((DEPLOY / path).read_text()) if doc["kind"] == kind]
    return document


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


def test_every_write_deploy_grants_is_under_its_admission_policy() -> None:
    policy = manifest("15-policy.yaml", "ValidatingAdmissionPolicy")
    watched = {
        (group, resource, operation)
        for rule in policy["spec"]["matchConstraints"]["resourceRules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for operation in rule["operations"]
    }
    operation = {"create": "CREATE", "update": "UPDATE", "patch": "UPDATE", "delete": "DELETE"}
    operation["deletecollection"] = "DELETE"  # the server admits each object of the collection as a DELETE
    roles = [
        ("ClusterRole", "kubelet-dra-node"),
        ("Role", "kubelet-dra-node-lease"),
        ("ClusterRole", "kubelet-dra-driver"),
    ]
    written = {
        (group, resource, operation[verb])
        for kind, name in roles
        for _, group, resource, verb in granted(kind, name)
        if verb in WRITES
    }
    assert written and written <= watched, written - watched
    binding = manifest("15-policy.yaml", "ValidatingAdmissionPolicyBinding")
    assert binding["spec"] == {"policyName": policy["metadata"]["name"], "validationActions": ["Deny"]}


def test_deploy_names_and_labels_its_nodes_as_its_policy_tells_them() -> None:
    policy = manifest("15-policy.yaml", "ValidatingAdmissionPolicy")["spec"]
    assert {"name": "prefix", "expression": f"'{SIMULATED_NODE_PREFIX}'"} in policy["variables"]
    assert any(f"'{SIMULATED_LABEL}' in o.metadata.labels" in rule["expression"] for rule in policy["validations"])
    [fleet] = manifest("20-nodes.yaml", "StatefulSet")["spec"]["template"]["spec"]["containers"]
    flags = dict(arg.removeprefix("--").split("=", 1) for arg in fleet["args"] if "=" in arg)
    assert all(name.startswith(SIMULATED_NODE_PREFIX) for name in expand(flags["nodes"]))
    assert f"{SIMULATED_LABEL}=true" in [arg.removeprefix("--node-label=") for arg in fleet["args"]]


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
