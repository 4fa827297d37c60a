"""Our Kubernetes protobuf held to the real kube-apiserver 1.36's decoder and encoder.

The recordings of ``tests/fixtures/kube-apiserver-1.36/protobuf`` are encoded by our mapping and
sent to the real server as client-go sends them; the real server must accept every body, store
exactly what the JSON twin says, and its own protobuf answers (objects, lists, Status errors,
watch frames) must decode to what it answers in JSON.
"""

from __future__ import annotations

import copy
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from realk8s import Api, RealControlPlane

from kubelet_dra.peers.kubeproto import mapping

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "kube-apiserver-1.36" / "protobuf"
PROTOBUF = "application/vnd.kubernetes.protobuf"
OBJECTS = sorted(
    path.stem
    for path in RECORDED.glob("*.pb")
    if json.loads((RECORDED / f"{path.stem}.json").read_text())["kind"] not in ("Status", "ResourceSliceList")
)
NAMESPACED = {"Pod", "Event", "ConfigMap", "ResourceClaim", "ResourceClaimTemplate", "Lease", "Service"}
SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "ownerReferences")


class Cleaning(Api):
    """The real server, shared with the other interop tests: what a test creates here, it deletes (a
    ResourceSlice left behind would be another node's slice to the conformance suite)."""

    def __init__(self, url: str, token: str, ca: str) -> None:
        super().__init__(url, token, ca)
        self.created: list[str] = []

    def cleanup(self) -> None:
        for path in reversed(self.created):
            self("DELETE", path)


@pytest.fixture
def api(real_apiserver: RealControlPlane) -> Iterator[Cleaning]:
    cleaning = Cleaning(real_apiserver.url, real_apiserver.token, str(real_apiserver.ca))
    yield cleaning
    cleaning.cleanup()


def collection(document: dict[str, Any]) -> str:
    group_version = document["apiVersion"]
    prefix = "/api/v1" if group_version == "v1" else f"/apis/{group_version}"
    namespace = f"/namespaces/{document['metadata']['namespace']}" if document["kind"] in NAMESPACED else ""
    plural = document["kind"].lower() + ("es" if document["kind"].endswith("s") else "s")
    return f"{prefix}{namespace}/{plural}"


def fresh(stem: str) -> dict[str, Any]:
    """The recording's JSON twin as a client would send it: a new name, no server-set metadata."""
    document = json.loads((RECORDED / f"{stem}.json").read_text())
    metadata = document["metadata"]
    for key in SERVER_SET:
        metadata.pop(key, None)
    metadata.pop("generateName", None)
    metadata["name"] = f"pb-{uuid.uuid4().hex[:8]}"
    if document["kind"] in NAMESPACED:
        metadata["namespace"] = "default"
    if document["kind"] == "Namespace":
        metadata["labels"]["kubernetes.io/metadata.name"] = metadata["name"]
    return document


def body_fields(document: dict[str, Any]) -> dict[str, Any]:
    """What a client sets on create: everything but the server-set metadata and the status."""
    kept = {key: value for key, value in document.items() if key not in ("metadata", "status")}
    kept["labels"] = document["metadata"].get("labels")
    kept["annotations"] = document["metadata"].get("annotations")
    return kept


def create(api: Cleaning, document: dict[str, Any]) -> dict[str, Any]:
    """POST ``document`` in our protobuf, answer asked in protobuf, decoded by us."""
    api.created.append(f"{collection(document)}/{document['metadata']['name']}")
    answer = api.raw("POST", collection(document), mapping.encode(document), content_type=PROTOBUF, accept=PROTOBUF)
    assert answer.status == 201, mapping.decode(answer.data) if answer.data.startswith(b"k8s\0") else answer.data
    assert answer.headers["Content-Type"] == PROTOBUF
    return mapping.decode(answer.data)


def read_json(api: Cleaning, path: str) -> dict[str, Any]:
    code, document = api("GET", path)
    assert code == 200, document
    return document


@pytest.mark.parametrize("stem", OBJECTS)
def test_the_real_server_accepts_our_bytes_and_stores_what_they_say(api: Cleaning, stem: str):
    sent = fresh(stem)
    created = create(api, sent)
    stored = read_json(api, f"{collection(sent)}/{sent['metadata']['name']}")
    assert created == stored, "the real server's protobuf answer decodes to something else than its JSON"
    assert body_fields(stored) == body_fields(sent)


def test_a_status_update_in_our_protobuf_is_stored(api: Cleaning):
    claim = fresh("resourceclaim.v1")
    recorded_status = claim.pop("status")
    created = create(api, claim)
    assert "allocation" not in created.get("status", {})
    update = copy.deepcopy(created)
    update["status"] = recorded_status
    path = f"{collection(claim)}/{claim['metadata']['name']}/status"
    answer = api.raw("PUT", path, mapping.encode(update), content_type=PROTOBUF, accept=PROTOBUF)
    assert answer.status == 200, answer.data
    assert read_json(api, path)["status"] == recorded_status == mapping.decode(answer.data)["status"]


@pytest.mark.parametrize("api_version", ["v1", "resource.k8s.io/v1", "meta.k8s.io/v1"])
def test_delete_options_in_our_protobuf_are_obeyed(api: Cleaning, api_version: str):
    """client-go sends DeleteOptions under the resource's group version; the real server's preconditions must
    bite, so the options were read and not skipped."""
    claim = fresh("resourceclaim.v1")
    claim.pop("status")
    created = create(api, claim)
    path = f"{collection(claim)}/{claim['metadata']['name']}"
    options = {"kind": "DeleteOptions", "apiVersion": api_version, "preconditions": {"uid": "not-its-uid"}}
    refused = api.raw("DELETE", path, mapping.encode(options), content_type=PROTOBUF, accept=PROTOBUF)
    assert refused.status == 409, refused.data
    assert "the UID in the precondition (not-its-uid) does not match" in mapping.decode(refused.data)["message"]
    options["preconditions"] = {"uid": created["metadata"]["uid"]}
    deleted = api.raw("DELETE", path, mapping.encode(options), content_type=PROTOBUF, accept=PROTOBUF)
    assert deleted.status == 200, deleted.data
    assert api("GET", path)[0] == 404


def test_the_real_servers_protobuf_list_and_status_decode_to_its_json(api: Cleaning):
    for stem in ("resourceslice.v1", "resourceslice.v1beta1"):
        create(api, fresh(stem))
    for version in ("v1", "v1beta2", "v1beta1"):
        path = f"/apis/resource.k8s.io/{version}/resourceslices"
        answer = api.raw("GET", path, accept=PROTOBUF)
        assert answer.status == 200
        assert mapping.decode(answer.data) == read_json(api, path)
    missing = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/not-there"
    refused = api.raw("GET", missing, accept=PROTOBUF)
    assert refused.status == 404
    assert mapping.decode(refused.data) == api("GET", missing)[1]


def test_the_real_servers_protobuf_watch_decodes_to_its_json_watch(api: Cleaning):
    claim = fresh("resourceclaim.v1")
    claim.pop("status")
    created = create(api, claim)
    path = f"{collection(claim)}/{claim['metadata']['name']}"
    code, changed = api("PATCH", path, {"metadata": {"labels": {"step": "two"}}}, "application/merge-patch+json")
    assert code == 200, changed
    assert api("DELETE", path)[0] == 200
    query = (
        f"{collection(claim)}?watch=1&resourceVersion={created['metadata']['resourceVersion']}&timeoutSeconds=2"
        f"&fieldSelector=metadata.name%3D{claim['metadata']['name']}"
    )
    frames = mapping.decode_watch_frames(api.raw("GET", query, accept=PROTOBUF).data)
    lines = api.raw("GET", query, accept="application/json").data.decode().splitlines()
    assert [frame["type"] for frame in frames] == ["MODIFIED", "DELETED"]
    assert frames == [json.loads(line) for line in lines]
