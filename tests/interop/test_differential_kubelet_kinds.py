"""The requests a real kubelet makes for its Lease, CSINode, CSIDrivers and RuntimeClasses, sent to the embedded
API server and to a real kube-apiserver 1.36, answers compared as in test_differential.py (volatile fields masked).

The kubelet speaks protobuf: each case also sends its writes as protobuf bodies and reads the answers as protobuf,
decoded by our mapping, which must say what the same server's JSON says.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from realk8s import Api
from test_differential import same_on_both, servers  # noqa: F401  (the fixture of both servers)

from kubelet_dra.peers.kubeproto import mapping

PROTOBUF = "application/vnd.kubernetes.protobuf"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
CSINODES = "/apis/storage.k8s.io/v1/csinodes"
CSIDRIVERS = "/apis/storage.k8s.io/v1/csidrivers"
RUNTIMECLASSES = "/apis/node.k8s.io/v1/runtimeclasses"
NODE_OWNER = {"apiVersion": "v1", "kind": "Node", "name": "node-x", "uid": "4b0e1f58-2f55-4b4e-9a55-0c5f1d1f6f11"}


def in_protobuf(api: Api, method: str, path: str, body: dict[str, Any] | None = None) -> tuple[int, Any]:
    """A request as client-go sends it for a built-in kind: protobuf body, protobuf answer (decoded)."""
    data = None if body is None else mapping.encode(body)
    response = api.raw(method, path, data, content_type=PROTOBUF if data else "", accept=PROTOBUF)
    return response.status, mapping.decode(response.data)


def node_lease(api: Api, suffix: str) -> Any:
    """The node lease controller: get, create when absent, then renew by update (a stale one conflicts)."""
    name = f"lease-{suffix}"
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": "kube-node-lease", "ownerReferences": [NODE_OWNER]},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": "2026-11-25T16:20:01.123456Z"},
    }
    answers = [in_protobuf(api, "GET", f"{LEASES}/{name}?timeout=10s")]
    code, created = in_protobuf(api, "POST", f"{LEASES}?timeout=10s", lease)
    renewed = {**created, "spec": {**created["spec"], "renewTime": "2026-11-25T16:20:11.654321Z"}}
    renewed["spec"].update(strategy="OldestEmulationVersion", preferredHolder="someone")  # a gate off in 1.36
    answers += [(code, created), in_protobuf(api, "PUT", f"{LEASES}/{name}?timeout=10s", renewed)]
    answers.append(in_protobuf(api, "PUT", f"{LEASES}/{name}?timeout=10s", renewed))
    answers.append(api("GET", f"{LEASES}/{name}"))
    return answers


def csi_node(api: Api, suffix: str) -> Any:
    """The kubelet's CSINode: get, create with no drivers and the node as owner, update, read back."""
    name = f"csinode-{suffix}"
    node = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": name, "ownerReferences": [NODE_OWNER]},
        "spec": {"drivers": None},
    }
    answers = [in_protobuf(api, "GET", f"{CSINODES}/{name}")]
    code, created = in_protobuf(api, "POST", CSINODES, node)
    driver = {"name": "hostpath.csi.k8s.io", "nodeID": name, "topologyKeys": None, "allocatable": {"count": 3}}
    changed = {**created, "metadata": {**created["metadata"], "annotations": {"example.com/a": "b"}}}
    changed["spec"] = {"drivers": [driver]}
    answers += [
        (code, created),
        in_protobuf(api, "PUT", f"{CSINODES}/{name}", changed),
        api("GET", f"{CSINODES}/{name}"),
    ]
    return answers


def csi_drivers(api: Api, suffix: str) -> Any:
    """CSIDrivers the kubelet's informer lists: defaults filled in, every field kept."""
    plain = {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": f"plain-{suffix}"}}
    full = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": f"full-{suffix}", "labels": {"set": suffix}},
        "spec": {
            "attachRequired": False,
            "podInfoOnMount": True,
            "volumeLifecycleModes": ["Ephemeral"],
            "tokenRequests": [{"audience": "aud", "expirationSeconds": 3600}],
            "requiresRepublish": True,
            "nodeAllocatableUpdatePeriodSeconds": 60,
        },
    }
    plain["metadata"]["labels"] = {"set": suffix}
    answers = [api("POST", CSIDRIVERS, plain), in_protobuf(api, "POST", CSIDRIVERS, full)]
    answers.append(in_protobuf(api, "GET", f"{CSIDRIVERS}?labelSelector=set%3D{suffix}"))
    return answers


def runtime_classes(api: Api, suffix: str) -> Any:
    """RuntimeClasses, created and then listed and watched the way the kubelet's informer does."""
    runtime_class = {
        "apiVersion": "node.k8s.io/v1",
        "kind": "RuntimeClass",
        "metadata": {"name": f"gvisor-{suffix}", "labels": {"set": suffix}},
        "handler": "runsc",
        "overhead": {"podFixed": {"cpu": "250m", "memory": "64Mi"}},
        "scheduling": {"nodeSelector": {"sandbox": "gvisor"}, "tolerations": [{"operator": "Exists"}]},
    }
    answers = [in_protobuf(api, "POST", RUNTIMECLASSES, runtime_class)]
    answers.append(in_protobuf(api, "GET", f"{RUNTIMECLASSES}?labelSelector=set%3D{suffix}&limit=500"))
    code, stream = api("GET", f"{RUNTIMECLASSES}?watch=true&labelSelector=set%3D{suffix}&timeoutSeconds=1")
    events = [json.loads(line) for line in stream.splitlines()] if isinstance(stream, str) else [stream]
    answers.append((code, [(event["type"], event["object"]) for event in events]))
    return answers


TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"


def tables(api: Api, suffix: str) -> Any:
    """``kubectl get`` of each kind: the same columns and cells (descriptions and ages aside)."""
    namespace = "/api/v1/namespaces/default/services"
    services = [
        {
            "metadata": {"name": f"headless-{suffix}", "labels": {"set": suffix}},
            "spec": {
                "type": "ClusterIP",
                "clusterIP": "None",
                "selector": {"b": "2", "a": "1"},
                "ports": [{"port": 5432, "protocol": "TCP"}],
            },
        },
        {
            "metadata": {"name": f"external-{suffix}", "labels": {"set": suffix}},
            "spec": {"type": "ExternalName", "externalName": "example.com"},
        },
    ]
    for service in services:
        api("POST", namespace, {"apiVersion": "v1", "kind": "Service", **service})
    node_lease(api, suffix)
    csi_node(api, suffix)
    csi_drivers(api, suffix)
    runtime_classes(api, suffix)
    answers = []
    for path in (
        f"{namespace}?labelSelector=set%3D{suffix}",
        f"{LEASES}?fieldSelector=metadata.name%3Dlease-{suffix}",
        f"{CSINODES}?fieldSelector=metadata.name%3Dcsinode-{suffix}",
        f"{CSIDRIVERS}?labelSelector=set%3D{suffix}",
        f"{RUNTIMECLASSES}?labelSelector=set%3D{suffix}",
    ):
        response = api.raw("GET", path, accept=TABLE)
        table = json.loads(response.data)
        columns = [
            {key: value for key, value in column.items() if key != "description"}
            for column in table["columnDefinitions"]
        ]
        ages = [index for index, column in enumerate(columns) if column["name"] == "Age"]
        rows = [[cell for index, cell in enumerate(row["cells"]) if index not in ages] for row in table["rows"]]
        answers.append((response.status, columns, sorted(rows)))
    return answers


def invalid_objects(api: Api, suffix: str) -> Any:
    """What kube-apiserver refuses in these kinds, in its words (the kubelet never sends them; users may)."""
    return [
        api(
            "POST",
            LEASES,
            {"metadata": {"name": f"l-{suffix}"}, "spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}},
        ),
        api("POST", RUNTIMECLASSES, {"metadata": {"name": f"r-{suffix}"}}),
        api(
            "POST",
            RUNTIMECLASSES,
            {
                "metadata": {"name": f"r2-{suffix}"},
                "handler": "Bad_Handler",
                "scheduling": {"nodeSelector": {"bad key!": "v"}},
            },
        ),
        api(
            "POST",
            CSINODES,
            {
                "metadata": {"name": f"n-{suffix}"},
                "spec": {
                    "drivers": [
                        {"name": "bad_driver", "nodeID": "", "topologyKeys": ["bad key!"]},
                        {"name": "d.csi", "nodeID": "x"},
                        {"name": "d.csi", "nodeID": "y"},
                    ]
                },
            },
        ),
        api("POST", CSIDRIVERS, {"metadata": {"name": f"bad_{suffix}"}, "spec": {}}),
        api(
            "POST",
            CSIDRIVERS,
            {
                "metadata": {"name": f"d-{suffix}"},
                "spec": {
                    "fsGroupPolicy": "Nope",
                    "volumeLifecycleModes": ["Wrong"],
                    "tokenRequests": [{"audience": "a"}, {"audience": "a"}],
                },
            },
        ),
    ]


CASES = {
    "invalid objects": invalid_objects,
    "tables": tables,
    "node lease": node_lease,
    "csi node": csi_node,
    "csi drivers": csi_drivers,
    "runtime classes": runtime_classes,
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_both_servers_answer_the_kubelets_requests_alike(servers: dict[str, Api], case: str):  # noqa: F811
    same_on_both(servers, CASES[case])
