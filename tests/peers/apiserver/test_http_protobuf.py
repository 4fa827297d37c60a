"""Kubernetes protobuf over HTTPS, as client-go programs speak it: bodies, answers, errors, watches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubelet_dra.peers.kubeproto import mapping
from kubelet_dra.workbench.testbed.serverthread import ServerThread

PROTOBUF = "application/vnd.kubernetes.protobuf"
CLIENT_GO_ACCEPT = f"{PROTOBUF}, application/json"
RECORDED = Path(__file__).resolve().parents[2] / "fixtures" / "kube-apiserver-1.36" / "protobuf"
VOLATILE = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation")


def recorded(stem: str) -> dict[str, Any]:
    """A real server's object as a client would send it: server-set metadata removed."""
    document = json.loads((RECORDED / f"{stem}.json").read_text())
    for key in VOLATILE:
        document["metadata"].pop(key, None)
    document["metadata"].pop("ownerReferences", None)
    document.pop("status", None)
    return document


def send(server: ServerThread, method: str, path: str, document: dict[str, Any] | None = None, **headers: str):
    """A protobuf request and its decoded protobuf answer."""
    response = server.request(
        method,
        path,
        body=mapping.encode(document) if document is not None else None,
        headers={"Content-Type": PROTOBUF, "Accept": CLIENT_GO_ACCEPT, **headers},
    )
    assert response.headers["Content-Type"] == PROTOBUF, response.data[:300]
    return response.status, mapping.decode(response.data)


COLLECTIONS = {
    "deviceclass": "/apis/resource.k8s.io/{v}/deviceclasses",
    "resourceclaim": "/apis/resource.k8s.io/{v}/namespaces/default/resourceclaims",
    "resourceclaimtemplate": "/apis/resource.k8s.io/{v}/namespaces/default/resourceclaimtemplates",
    "resourceslice": "/apis/resource.k8s.io/{v}/resourceslices",
}


@pytest.mark.parametrize("version", ["v1", "v1beta2", "v1beta1"])
@pytest.mark.parametrize("kind", sorted(COLLECTIONS))
def test_dra_objects_are_created_read_and_listed_in_protobuf(apiserver: ServerThread, kind: str, version: str):
    document = recorded(f"{kind}.{version}")
    if kind == "resourceslice":
        apiserver.json("POST", "/api/v1/nodes", body={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}})
        document["spec"]["nodeName"] = "n"
        document["spec"].pop("nodeSelector", None)
    collection = COLLECTIONS[kind].format(v=version)
    code, created = send(apiserver, "POST", collection, document)
    assert code == 201, created
    assert created["kind"] == document["kind"] and created["apiVersion"] == document["apiVersion"]
    assert created["spec"] == {
        **document["spec"],
        **{k: created["spec"][k] for k in created["spec"].keys() - document["spec"].keys()},
    }
    name = created["metadata"]["name"]
    code, fetched = send(apiserver, "GET", f"{collection}/{name}")
    assert code == 200 and fetched == created
    code, listed = send(apiserver, "GET", collection)
    assert listed["kind"] == f"{document['kind']}List"
    assert [item["metadata"]["name"] for item in listed["items"]] == [name]
    assert listed["metadata"]["resourceVersion"]
    code, as_json = apiserver.json("GET", f"{collection}/{name}")
    assert as_json == created


def test_status_update_and_delete_options_in_protobuf(apiserver: ServerThread):
    claims = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
    code, claim = send(apiserver, "POST", claims, recorded("resourceclaim.v1"))
    assert code == 201
    allocated = json.loads((RECORDED / "resourceclaim.v1.json").read_text())["status"]
    claim["status"] = allocated
    code, updated = send(apiserver, "PUT", f"{claims}/{claim['metadata']['name']}/status", claim)
    assert code == 200, updated
    assert updated["status"]["allocation"] == allocated["allocation"]
    options = {"apiVersion": "resource.k8s.io/v1", "kind": "DeleteOptions", "preconditions": {"uid": "not-it"}}
    code, refused = send(apiserver, "DELETE", f"{claims}/{claim['metadata']['name']}", options)
    assert (code, refused["kind"], refused["reason"]) == (409, "Status", "Conflict")
    options["preconditions"]["uid"] = claim["metadata"]["uid"]
    code, deleted = send(apiserver, "DELETE", f"{claims}/{claim['metadata']['name']}", options)
    assert code == 200 and deleted["metadata"]["name"] == claim["metadata"]["name"]


def test_core_objects_in_protobuf(apiserver: ServerThread):
    for stem, collection in (
        ("namespace", "/api/v1/namespaces"),
        ("node", "/api/v1/nodes"),
        ("configmap", "/api/v1/namespaces/default/configmaps"),
        ("pod", "/api/v1/namespaces/default/pods"),
        ("event", "/api/v1/namespaces/default/events"),
    ):
        document = recorded(stem)
        if stem == "namespace":
            document["metadata"]["name"] = "from-protobuf"
        code, created = send(apiserver, "POST", collection, document)
        assert code == 201, (stem, created)
        assert created["metadata"]["name"] == document["metadata"]["name"]


def test_errors_are_protobuf_status_objects_like_the_real_ones(apiserver: ServerThread):
    code, status = send(apiserver, "GET", "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/does-not-exist")
    real = json.loads((RECORDED / "status-404.json").read_text())
    assert code == 404
    assert status == real


def test_a_malformed_body_is_a_bad_request_in_kube_apiservers_words(apiserver: ServerThread):
    response = apiserver.request(
        "POST", "/api/v1/namespaces/default/configmaps", body=b"nomagic", headers={"Content-Type": PROTOBUF}
    )
    status = json.loads(response.data)
    assert (response.status, status["reason"]) == (400, "BadRequest")
    assert status["message"].startswith("the object provided is unrecognized (must be of type ConfigMap): ")
    assert "magic number" in status["message"]


def test_a_body_of_another_kind_is_refused(apiserver: ServerThread):
    code, status = send(apiserver, "POST", "/api/v1/namespaces/default/configmaps", recorded("namespace"))
    assert (code, status["reason"]) == (400, "BadRequest")
    assert "does not match the expected kind (ConfigMap)" in status["message"]


def test_metadata_only_views_and_tables(apiserver: ServerThread):
    send(apiserver, "POST", "/api/v1/namespaces/default/configmaps", recorded("configmap"))
    accept = f"{PROTOBUF};as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
    code, listed = send(apiserver, "GET", "/api/v1/namespaces/default/configmaps", Accept=accept)
    assert (code, listed["kind"], listed["apiVersion"]) == (200, "PartialObjectMetadataList", "meta.k8s.io/v1")
    assert "data" not in listed["items"][0]
    table_only = apiserver.request(
        "GET", "/api/v1/namespaces", headers={"Accept": f"{PROTOBUF};as=Table;v=v1;g=meta.k8s.io"}
    )
    assert table_only.status == 406


def test_a_protobuf_watch_streams_frames(apiserver: ServerThread):
    _, created = send(apiserver, "POST", "/api/v1/namespaces/default/configmaps", recorded("configmap"))
    since = int(created["metadata"]["resourceVersion"]) - 1
    response = apiserver.request(
        "GET",
        f"/api/v1/namespaces/default/configmaps?watch=1&resourceVersion={since}&timeoutSeconds=1",
        headers={"Accept": CLIENT_GO_ACCEPT},
    )
    assert response.headers["Content-Type"] == f"{PROTOBUF};stream=watch"
    events = mapping.decode_watch_frames(response.data)
    assert [(event["type"], event["object"]["metadata"]["name"]) for event in events] == [
        ("ADDED", created["metadata"]["name"])
    ]
    assert events[0]["object"] == created


def test_an_expired_watch_ends_with_a_protobuf_error_event(start_apiserver):
    server = start_apiserver(history_size=3)
    for index in range(5):
        server.json(
            "POST",
            "/api/v1/namespaces",
            body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"n{index}"}},
        )
    response = server.request(
        "GET", "/api/v1/namespaces?watch=1&resourceVersion=1&timeoutSeconds=1", headers={"Accept": CLIENT_GO_ACCEPT}
    )
    events = mapping.decode_watch_frames(response.data)
    assert [(event["type"], event["object"]["kind"], event["object"]["code"]) for event in events] == [
        ("ERROR", "Status", 410)
    ]
