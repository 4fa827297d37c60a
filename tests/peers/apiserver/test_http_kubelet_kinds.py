"""The kinds a real kubelet uses besides pods and nodes, over HTTPS as it speaks: protobuf bodies and answers.

Its Lease (coordination.k8s.io/v1), CSINode and CSIDrivers (storage.k8s.io/v1), RuntimeClasses (node.k8s.io/v1)
and Services: without them a kubelet 1.36 stays NotReady ("failed to initialize CSINode") and logs 404s. Each
recording of a real kube-apiserver 1.36 is created in protobuf, read back in JSON and in protobuf, listed and
watched the way client-go informers do (initial events, then the bookmark that ends them).
"""

from __future__ import annotations

import json
import subprocess

import pytest
from test_http_protobuf import PROTOBUF, recorded, send

from kubelet_dra.peers.kubeproto import mapping
from kubelet_dra.workbench.testbed.serverthread import ServerThread

COLLECTIONS = {
    "lease": "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
    "csinode": "/apis/storage.k8s.io/v1/csinodes",
    "csinode-empty": "/apis/storage.k8s.io/v1/csinodes",
    "csidriver": "/apis/storage.k8s.io/v1/csidrivers",
    "runtimeclass": "/apis/node.k8s.io/v1/runtimeclasses",
    "service-external": "/api/v1/namespaces/default/services",
    "service-headless": "/api/v1/namespaces/default/services",
}
INITIAL_EVENTS_END = "k8s.io/initial-events-end"


@pytest.mark.parametrize("stem", sorted(COLLECTIONS))
def test_the_kubelets_kinds_are_created_read_and_listed_in_protobuf(apiserver: ServerThread, stem: str):
    document = recorded(stem)
    code, created = send(apiserver, "POST", COLLECTIONS[stem], document)
    assert code == 201, created
    path = f"{COLLECTIONS[stem]}/{document['metadata']['name']}"
    _, as_json = apiserver.json("GET", path)
    assert send(apiserver, "GET", path)[1] == as_json
    for key, value in document.items():
        if key != "metadata":
            assert as_json[key] == value, key
    code, listed = send(apiserver, "GET", COLLECTIONS[stem])
    assert code == 200 and listed["kind"] == f"{document['kind']}List"
    assert [item["metadata"]["name"] for item in listed["items"]] == [document["metadata"]["name"]]


def test_a_renewed_lease_keeps_its_microseconds_and_a_stale_renewal_conflicts(apiserver: ServerThread):
    collection = COLLECTIONS["lease"]
    _, created = send(apiserver, "POST", collection, recorded("lease"))
    renewed = {**created, "spec": {**created["spec"], "renewTime": "2026-11-25T16:20:21.000007Z"}}
    code, updated = send(apiserver, "PUT", f"{collection}/node-1", renewed)
    assert code == 200 and updated["spec"]["renewTime"] == "2026-11-25T16:20:21.000007Z"
    code, stale = send(apiserver, "PUT", f"{collection}/node-1", renewed)
    assert code == 409 and stale["reason"] == "Conflict"


def test_a_csi_driver_gets_kube_apiservers_defaults(apiserver: ServerThread):
    code, created = send(apiserver, "POST", COLLECTIONS["csidriver"], {**recorded("csidriver-defaults"), "spec": {}})
    assert code == 201
    assert created["spec"] == recorded("csidriver-defaults")["spec"]


def test_services_are_watched_as_the_kubelet_does_with_initial_events_and_a_bookmark(apiserver: ServerThread):
    for stem in ("service-external", "service-headless"):
        send(apiserver, "POST", COLLECTIONS[stem], recorded(stem))
    query = (
        "/api/v1/services?allowWatchBookmarks=true&fieldSelector=spec.clusterIP%21%3DNone"
        "&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true&timeoutSeconds=1"
    )
    response = apiserver.request("GET", query, headers={"Accept": f"{PROTOBUF};stream=watch"})
    assert response.status == 200
    events = mapping.decode_watch_frames(response.data)
    added = [event["object"]["metadata"]["name"] for event in events if event["type"] == "ADDED"]
    assert added == ["external"], "the headless Service (clusterIP None) is not selected"
    bookmarks = [event for event in events if event["type"] == "BOOKMARK"]
    assert bookmarks and bookmarks[0]["object"]["metadata"]["annotations"][INITIAL_EVENTS_END] == "true"


def test_kubectl_finds_the_kubelets_kinds(apiserver: ServerThread, tmp_path):
    kubeconfig = apiserver.server.kubeconfig(tmp_path / "kubeconfig")
    send(apiserver, "POST", COLLECTIONS["lease"], recorded("lease"))
    listed = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "get", "leases", "-A", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert [item["metadata"]["name"] for item in json.loads(listed.stdout)["items"]] == ["node-1"]
    resources = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "api-resources", "-o", "name"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    assert {"leases.coordination.k8s.io", "csinodes.storage.k8s.io", "runtimeclasses.node.k8s.io", "services"} <= set(
        resources
    )


def test_kubectl_get_prints_kube_apiservers_columns_for_them(apiserver: ServerThread, tmp_path):
    kubeconfig = apiserver.server.kubeconfig(tmp_path / "kubeconfig")
    for stem in ("lease", "csinode", "csidriver", "runtimeclass", "service-headless"):
        send(apiserver, "POST", COLLECTIONS[stem], recorded(stem))

    def kubectl_get(*what: str) -> list[list[str]]:
        output = subprocess.run(
            ["kubectl", "--kubeconfig", str(kubeconfig), "get", *what],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        return [line.split()[:-1] for line in output.splitlines()]  # without AGE

    assert kubectl_get("leases", "-n", "kube-node-lease") == [["NAME", "HOLDER"], ["node-1", "node-1"]]
    assert kubectl_get("csinodes") == [["NAME", "DRIVERS"], ["node-1", "2"]]
    assert kubectl_get("runtimeclasses") == [["NAME", "HANDLER"], ["gvisor", "runsc"]]
    assert kubectl_get("csidrivers") == [
        ["NAME", "ATTACHREQUIRED", "PODINFOONMOUNT", "STORAGECAPACITY", "TOKENREQUESTS", "REQUIRESREPUBLISH", "MODES"],
        ["full.csi.k8s.io", "false", "true", "true", "aud,", "true", "Persistent,Ephemeral"],
    ]
    assert kubectl_get("services") == [
        ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)"],
        ["headless", "ClusterIP", "None", "<none>", "5432/TCP"],
    ]


def test_invalid_leases_csinodes_and_runtime_classes_are_refused_in_kube_apiservers_words(apiserver: ServerThread):
    code, refused = apiserver.json(
        "POST",
        COLLECTIONS["lease"],
        body={"metadata": {"name": "l"}, "spec": {"leaseDurationSeconds": 0, "leaseTransitions": -1}},
    )
    assert (code, refused["message"]) == (
        422,
        'Lease.coordination.k8s.io "l" is invalid: [spec.leaseDurationSeconds: Invalid value: 0: must be greater'
        " than 0, spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0]",
    )
    code, refused = apiserver.json("POST", COLLECTIONS["runtimeclass"], body={"metadata": {"name": "r"}})
    assert (code, refused["details"]["causes"]) == (
        422,
        [{"reason": "FieldValueRequired", "message": "Required value", "field": "handler"}],
    )
    drivers = [{"name": "d.csi", "nodeID": "x"}, {"name": "d.csi", "nodeID": ""}]
    body = {"metadata": {"name": "n"}, "spec": {"drivers": drivers}}
    code, refused = apiserver.json("POST", COLLECTIONS["csinode"], body=body)
    assert [cause["field"] for cause in refused["details"]["causes"]] == [
        "spec.drivers[1].nodeID",
        "spec.drivers[1].name",
    ]
