"""CRUD over real HTTPS with the official Python client, as a DRA tool or test would use it."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubelet_dra.workbench.testbed.serverthread import ServerThread
from kubelet_dra.workbench.testbed.serverthread import resource_slice_manifest as slice_manifest


def pod_manifest(name: str, node: str = "node-a", labels: dict[str, str] | None = None) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": "busybox"}]},
    }


def test_resourceslice_create_get_list_update_delete(resource_v1: client.ResourceV1Api) -> None:
    created = resource_v1.create_resource_slice(slice_manifest("slice-a", devices=2))
    assert created.metadata.name == "slice-a"
    assert created.metadata.uid and created.metadata.resource_version
    fetched = resource_v1.read_resource_slice("slice-a")
    assert [d.name for d in fetched.spec.devices] == ["gpu-0", "gpu-1"]

    fetched.spec.pool.generation = 2
    updated = resource_v1.replace_resource_slice("slice-a", fetched)
    assert updated.spec.pool.generation == 2
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)

    listed = resource_v1.list_resource_slice()
    assert [item.metadata.name for item in listed.items] == ["slice-a"]
    assert listed.metadata.resource_version

    deleted = resource_v1.delete_resource_slice("slice-a")
    assert deleted.metadata.name == "slice-a"
    with pytest.raises(ApiException) as missing:
        resource_v1.read_resource_slice("slice-a")
    assert missing.value.status == 404


def test_not_found_is_the_status_kube_apiserver_sends(apiserver: ServerThread) -> None:
    code, body = apiserver.json("GET", "/api/v1/namespaces/default/pods/doesnotexist")
    assert code == 404
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "doesnotexist" not found',
        "reason": "NotFound",
        "details": {"name": "doesnotexist", "kind": "pods"},
        "code": 404,
    }


def test_default_namespaces_exist(core: client.CoreV1Api) -> None:
    names = {ns.metadata.name for ns in core.list_namespace().items}
    assert {"default", "kube-system", "kube-public", "kube-node-lease"} <= names


def test_generate_name_and_already_exists(resource_v1: client.ResourceV1Api) -> None:
    manifest = slice_manifest("")
    manifest["metadata"] = {"generateName": "node-a-gpu.example.com-"}
    created = resource_v1.create_resource_slice(manifest)
    assert created.metadata.name.startswith("node-a-gpu.example.com-")
    assert len(created.metadata.name) == len("node-a-gpu.example.com-") + 5
    with pytest.raises(ApiException) as duplicate:
        resource_v1.create_resource_slice(slice_manifest(created.metadata.name))
    assert duplicate.value.status == 409


def test_update_with_stale_resource_version_conflicts(core: client.CoreV1Api) -> None:
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": "cfg"}, "data": {"a": "1"}})
    core.patch_namespaced_config_map("cfg", "default", {"data": {"a": "2"}})
    cm.data = {"a": "3"}
    with pytest.raises(ApiException) as conflict:
        core.replace_namespaced_config_map("cfg", "default", cm)
    assert conflict.value.status == 409
    assert "Conflict" in conflict.value.body
    assert core.read_namespaced_config_map("cfg", "default").data == {"a": "2"}


def test_status_subresource_changes_only_status(apiserver: ServerThread, resource_v1: client.ResourceV1Api) -> None:
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "claim1"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
    }
    resource_v1.create_namespaced_resource_claim("default", claim)
    allocation = {
        "status": {
            "allocation": {
                "devices": {
                    "results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0"}]
                }
            }
        },
        "spec": {"devices": {"requests": []}},
    }
    code, patched = apiserver.json(
        "PATCH",
        "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/claim1/status",
        body=allocation,
        headers={"Content-Type": "application/merge-patch+json"},
    )
    assert code == 200, patched
    assert patched["status"]["allocation"]["devices"]["results"][0]["device"] == "gpu-0"
    assert patched["spec"]["devices"]["requests"][0]["name"] == "gpu"
    status = resource_v1.read_namespaced_resource_claim_status("claim1", "default")
    assert status.status.allocation.devices.results[0].device == "gpu-0"


def test_label_and_field_selectors(core: client.CoreV1Api) -> None:
    core.create_namespaced_pod("default", pod_manifest("a", "node-a", {"app": "x"}))
    core.create_namespaced_pod("default", pod_manifest("b", "node-b", {"app": "x"}))
    core.create_namespaced_pod("default", pod_manifest("c", "node-a", {"app": "y"}))
    by_label = core.list_namespaced_pod("default", label_selector="app=x")
    assert sorted(p.metadata.name for p in by_label.items) == ["a", "b"]
    by_field = core.list_namespaced_pod("default", field_selector="spec.nodeName=node-a")
    assert sorted(p.metadata.name for p in by_field.items) == ["a", "c"]
    both = core.list_pod_for_all_namespaces(label_selector="app=x", field_selector="spec.nodeName=node-a")
    assert [p.metadata.name for p in both.items] == ["a"]


def test_paged_list_returns_continue_tokens(resource_v1: client.ResourceV1Api) -> None:
    for index in range(5):
        resource_v1.create_resource_slice(slice_manifest(f"s{index}"))
    first = resource_v1.list_resource_slice(limit=2)
    assert len(first.items) == 2 and first.metadata.var_continue
    assert first.metadata.remaining_item_count == 3
    names = [item.metadata.name for item in first.items]
    token = first.metadata.var_continue
    while token:
        page = resource_v1.list_resource_slice(limit=2, _continue=token)
        names += [item.metadata.name for item in page.items]
        token = page.metadata.var_continue
    assert sorted(names) == [f"s{index}" for index in range(5)]


def test_deletecollection_by_field_selector(resource_v1: client.ResourceV1Api) -> None:
    resource_v1.create_resource_slice(slice_manifest("a1", node="node-a"))
    resource_v1.create_resource_slice(slice_manifest("a2", node="node-a"))
    resource_v1.create_resource_slice(slice_manifest("b1", node="node-b"))
    resource_v1.delete_collection_resource_slice(field_selector="spec.nodeName=node-a")
    assert [item.metadata.name for item in resource_v1.list_resource_slice().items] == ["b1"]


def test_cascading_delete_removes_dependents(core: client.CoreV1Api, resource_v1: client.ResourceV1Api) -> None:
    node = core.create_node({"metadata": {"name": "node-a"}})
    manifest = slice_manifest("owned")
    manifest["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": node.metadata.uid, "controller": True}
    ]
    resource_v1.create_resource_slice(manifest)
    resource_v1.create_resource_slice(slice_manifest("unowned"))
    core.delete_node("node-a", propagation_policy="Foreground")
    assert [item.metadata.name for item in resource_v1.list_resource_slice().items] == ["unowned"]


def test_dry_run_create_stores_nothing(resource_v1: client.ResourceV1Api) -> None:
    created = resource_v1.create_resource_slice(slice_manifest("dry"), dry_run="All")
    assert created.metadata.name == "dry"
    assert resource_v1.list_resource_slice().items == []


def test_delete_with_preconditions_body(apiserver: ServerThread, resource_v1: client.ResourceV1Api) -> None:
    resource_v1.create_resource_slice(slice_manifest("guarded"))
    path = "/apis/resource.k8s.io/v1/resourceslices/guarded"
    code, body = apiserver.json("DELETE", path, body={"kind": "DeleteOptions", "preconditions": {"uid": "not-it"}})
    assert code == 409, body
    code, body = apiserver.json("DELETE", path, body={"kind": "DeleteOptions", "gracePeriodSeconds": 0})
    assert code == 200 and body["metadata"]["name"] == "guarded"


def test_core_delete_answers_with_status(apiserver: ServerThread, core: client.CoreV1Api) -> None:
    core.create_namespaced_config_map("default", {"metadata": {"name": "gone"}})
    code, body = apiserver.json("DELETE", "/api/v1/namespaces/default/configmaps/gone")
    assert code == 200
    assert body["kind"] == "Status" and body["status"] == "Success"
    assert body["details"]["name"] == "gone" and body["details"]["kind"] == "configmaps"


@pytest.mark.parametrize(
    ("path", "manifest", "message"),
    [
        (
            "/api/v1/namespaces/default/configmaps",
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "other"}},
            "the namespace of the provided object does not match the namespace sent on the request",
        ),
        (
            "/apis/resource.k8s.io/v1/resourceslices",
            {**slice_manifest("x"), "apiVersion": "resource.k8s.io/v1beta1"},
            "the API version in the data (resource.k8s.io/v1beta1) does not match the expected API version",
        ),
    ],
)
def test_create_mismatching_the_url_is_bad_request(
    apiserver: ServerThread, path: str, manifest: dict, message: str
) -> None:
    code, body = apiserver.json("POST", path, body=manifest)
    assert code == 400
    assert body["reason"] == "BadRequest" and message in body["message"]


def test_update_with_other_name_is_bad_request(apiserver: ServerThread, resource_v1: client.ResourceV1Api) -> None:
    resource_v1.create_resource_slice(slice_manifest("right"))
    code, body = apiserver.json("PUT", "/apis/resource.k8s.io/v1/resourceslices/right", body=slice_manifest("wrong"))
    assert code == 400
    assert body["message"] == "the name of the object (wrong) does not match the name on the URL (right)"


def test_strict_field_validation_rejects_unknown_fields(apiserver: ServerThread) -> None:
    manifest = {**slice_manifest("strict"), "bogus": 1}
    code, body = apiserver.json("POST", "/apis/resource.k8s.io/v1/resourceslices?fieldValidation=Strict", body=manifest)
    assert code == 400
    assert 'strict decoding error: unknown field "bogus"' in body["message"]
    response = apiserver.request("POST", "/apis/resource.k8s.io/v1/resourceslices", body=manifest)
    assert response.status == 201
    assert response.headers["Warning"] == '299 - "unknown field \\"bogus\\""'


def test_unsupported_patch_type_is_415(apiserver: ServerThread, resource_v1: client.ResourceV1Api) -> None:
    resource_v1.create_resource_slice(slice_manifest("p"))
    response = apiserver.request(
        "PATCH", "/apis/resource.k8s.io/v1/resourceslices/p", body=b"{}", headers={"Content-Type": "text/plain"}
    )
    assert response.status == 415


def test_server_side_apply_creates_then_updates(apiserver: ServerThread) -> None:
    path = "/api/v1/namespaces/default/configmaps/applied?fieldManager=test"
    headers = {"Content-Type": "application/apply-patch+yaml"}
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: '1'\n"
    first = apiserver.request("PATCH", path, body=manifest.encode(), headers=headers)
    assert first.status == 201
    second = apiserver.request("PATCH", path, body=manifest.replace("'1'", "'2'").encode(), headers=headers)
    assert second.status == 200
    assert apiserver.json("GET", "/api/v1/namespaces/default/configmaps/applied")[1]["data"] == {"a": "2"}
    code, body = apiserver.json(
        "PATCH", "/api/v1/namespaces/default/configmaps/applied", body=manifest.encode(), headers=headers
    )
    assert code == 422 and body["details"]["causes"][0]["field"] == "fieldManager"


def test_post_to_all_namespaces_collection_is_not_allowed(apiserver: ServerThread) -> None:
    code, body = apiserver.json("POST", "/api/v1/pods", body=pod_manifest("x"))
    assert code == 405 and body["reason"] == "MethodNotAllowed"
