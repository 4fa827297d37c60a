"""Bodies are decoded into their kind's type before anything is stored, as kube-apiserver decodes them.

Each mistyped body of ``typed_bodies`` gets kube-apiserver's answer and leaves nothing behind;
after all of them every resource still lists as JSON and as protobuf, which client-go readers
(drivers' informers, kube-scheduler) depend on.
"""

from __future__ import annotations

import json

import pytest
from typed_bodies import CASES, CONFIG_MAPS, JSON, PATCH_CASES, SLICES, Case, config_map

from kubelet_dra.peers.kubeproto import mapping
from kubelet_dra.workbench.testbed.serverthread import ServerThread

PROTOBUF = "application/vnd.kubernetes.protobuf"


def post(apiserver: ServerThread, case: Case) -> tuple[int, dict, list[str]]:
    response = apiserver.request("POST", case.path, body=case.body, headers={"Content-Type": JSON})
    return response.status, json.loads(response.data), response.headers.getlist("Warning")


def names(apiserver: ServerThread, path: str) -> set[str]:
    code, listed = apiserver.json("GET", path.split("?")[0])
    assert code == 200
    return {item["metadata"]["name"] for item in listed["items"]}


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.id)
def test_each_body_is_answered_as_kube_apiserver_does(apiserver: ServerThread, case: Case) -> None:
    case = case.named("")
    code, answer, warnings = post(apiserver, case)
    assert code == case.code, answer
    if code >= 400:
        assert (answer["reason"], answer["message"][: len(case.message)]) == (case.reason, case.message)
        assert case.id not in names(apiserver, case.path)
    else:
        assert answer["metadata"]["name"] == case.id
        assert case.id in names(apiserver, case.path)
    assert warnings == list(case.warnings)


def test_invalid_utf8_is_replaced_byte_by_byte(apiserver: ServerThread) -> None:
    code, answer, _ = post(apiserver, next(case for case in CASES if case.id == "cm-invalid-utf8").named(""))
    assert code == 201
    assert answer["data"] == {"a": "x\ufffd\ufffd\ufffdy"}


def test_escaped_surrogates_are_joined_or_replaced_as_go_does(apiserver: ServerThread) -> None:
    code, answer, _ = post(apiserver, next(case for case in CASES if case.id == "cm-lone-surrogate").named(""))
    assert code == 201
    assert answer["data"] == {"a": "x\ufffdy\U0001f600"}


def test_after_every_bad_write_both_encodings_list(apiserver: ServerThread) -> None:
    for case in CASES:
        post(apiserver, case.named("-1"))
    for path in (CONFIG_MAPS, SLICES):
        assert apiserver.json("GET", path)[0] == 200
        response = apiserver.request("GET", path, headers={"Accept": PROTOBUF})
        assert response.status == 200
        assert mapping.decode(response.data)["kind"].endswith("List")


@pytest.mark.parametrize(("content_type", "body", "code", "reason"), PATCH_CASES, ids=lambda value: str(value)[:24])
def test_a_patch_whose_result_is_mistyped_is_refused(
    apiserver: ServerThread, content_type: str, body: bytes, code: int, reason: str
) -> None:
    created = post(apiserver, Case("patched", CONFIG_MAPS, config_map(b'{"a":"x"}'), 201).named(""))
    assert created[0] == 201
    response = apiserver.request(
        "PATCH",
        f"{CONFIG_MAPS}/patched?fieldManager=test",
        body=body.replace(b"NAME", b"patched"),
        headers={"Content-Type": content_type},
    )
    answer = json.loads(response.data)
    assert (response.status, answer.get("reason", "")) == (code, reason)
    if code == 422:
        assert answer["message"].startswith(' "" is invalid: patch: Invalid value: "')
        assert answer["details"]["causes"][0]["field"] == "patch"
    else:
        assert answer["message"].startswith("failed to create typed patch object (/patched; /v1, Kind=ConfigMap): ")
    if b"datax" in body:  # an applied field the type does not have
        assert answer["message"].endswith(": .metadata.unexpected: field not declared in schema")
    else:
        assert "json: cannot unmarshal number into Go struct field ConfigMap.data of type string" in answer["message"]
    assert apiserver.json("GET", f"{CONFIG_MAPS}/patched")[1]["data"] == {"a": "x"}


def test_a_merge_patch_warns_of_its_unknown_and_duplicate_fields(apiserver: ServerThread) -> None:
    post(apiserver, Case("warned", CONFIG_MAPS, config_map(b'{"a":"x"}'), 201).named(""))
    body = b'{"data":{"a":"y","a":"z"},"bogus":1,"metadata":{"zz":1}}'
    headers = {"Content-Type": "application/merge-patch+json"}
    response = apiserver.request("PATCH", f"{CONFIG_MAPS}/warned", body=body, headers=headers)
    assert response.status == 200
    assert json.loads(response.data)["data"] == {"a": "z"}
    assert response.headers.getlist("Warning") == [
        '299 - "duplicate field \\"data.a\\""',
        '299 - "unknown field \\"bogus\\""',
        '299 - "unknown field \\"metadata.zz\\""',
    ]
    strict = apiserver.request("PATCH", f"{CONFIG_MAPS}/warned?fieldValidation=Strict", body=body, headers=headers)
    assert strict.status == 422
    assert (
        'strict decoding error: duplicate field "data.a", unknown field "bogus"' in json.loads(strict.data)["message"]
    )


def test_yaml_whole_numbers_decode_as_integers_as_through_go_yaml(apiserver: ServerThread) -> None:
    body = (
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: yaml-slice}\n"
        "spec: {driver: gpu.example.com, nodeName: node-a, pool: {name: p, generation: 1.0, resourceSliceCount: 1}"
        ", devices: [{name: d, attributes: {a: {int: 2.0}}}]}\n"
    )
    response = apiserver.request("POST", SLICES, body=body.encode(), headers={"Content-Type": "application/yaml"})
    assert response.status == 201, response.data
    stored = json.loads(response.data)
    assert stored["spec"]["devices"][0]["attributes"]["a"] == {"int": 2}
    half = body.replace("yaml-slice", "yaml-half").replace("int: 2.0", "int: 2.5")
    response = apiserver.request("POST", SLICES, body=half.encode(), headers={"Content-Type": "application/yaml"})
    assert response.status == 400
    assert "cannot unmarshal number 2.5 into Go struct field DeviceAttribute" in json.loads(response.data)["message"]


def test_empty_lists_and_maps_are_dropped_as_go_omitempty_drops_them(apiserver: ServerThread) -> None:
    """kube-apiserver answers ``data: {}``, ``labels: {}``, ``finalizers: []`` with the fields absent; a
    Namespace's empty finalizers are therefore defaulted."""
    body = config_map(b"{}", b'"name":"empty","labels":{},"finalizers":[]')
    code, answer, _ = post(apiserver, Case("empty", CONFIG_MAPS, body, 201))
    assert code == 201
    assert ("data" in answer, "labels" in answer["metadata"], "finalizers" in answer["metadata"]) == (False,) * 3
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "empty"}, "spec": {"finalizers": []}}
    assert apiserver.json("POST", "/api/v1/namespaces", body=namespace)[1]["spec"] == {"finalizers": ["kubernetes"]}
