"""PATCH: JSON merge patch, JSON patch, strategic merge patch and its directives, server-side apply."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from test_store_support import (
    CONFIGMAPS,
    NODES,
    PODS,
    RESOURCECLAIMS,
    RESOURCESLICES,
    Clock,
    configmap,
    make_store,
    owner_reference,
    pod,
)

from kubelet_dra.peers import log
from kubelet_dra.peers.apiserver.patch import (
    APPLY_PATCH,
    JSON_PATCH,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
)
from kubelet_dra.peers.apiserver.patch_strategic import strategic_merge
from kubelet_dra.peers.apiserver.status import ApiError
from kubelet_dra.peers.apiserver.store import Store
from kubelet_dra.workbench.testbed.serverthread import resource_slice_manifest as resource_slice


def _patch(store: Store, rt: Any, name: str, patch_type: str, patch: Any, **options: Any) -> dict[str, Any]:
    body = patch.encode() if isinstance(patch, str) else json.dumps(patch).encode()
    namespace = "default" if rt.namespaced else None
    return store.patch(rt, "v1", namespace, name, patch_type, body, **options)


def _node(name: str = "n1", **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, **fields}


def test_merge_patch_sets_and_removes_fields() -> None:
    store = make_store()
    store.create(CONFIGMAPS, "default", configmap("a", labels={"keep": "1", "drop": "1"}, data={"x": "1"}))
    patched = _patch(store, CONFIGMAPS, "a", MERGE_PATCH, {"metadata": {"labels": {"drop": None, "new": "2"}}})
    assert patched["metadata"]["labels"] == {"keep": "1", "new": "2"}
    assert patched["data"] == {"x": "1"}
    assert store.get(CONFIGMAPS, "default", "a") == patched


def test_a_resource_version_in_a_patch_is_a_precondition() -> None:
    store = make_store()
    created = store.create(CONFIGMAPS, "default", configmap("a", data={"x": "1"}))
    rv = created["metadata"]["resourceVersion"]
    _patch(store, CONFIGMAPS, "a", MERGE_PATCH, {"metadata": {"resourceVersion": rv}, "data": {"x": "2"}})
    with pytest.raises(ApiError) as err:
        _patch(store, CONFIGMAPS, "a", MERGE_PATCH, {"metadata": {"resourceVersion": rv}, "data": {"x": "3"}})
    assert (err.value.code, err.value.reason) == (409, "Conflict")
    assert store.get(CONFIGMAPS, "default", "a")["data"] == {"x": "2"}


def test_patching_a_missing_object_is_404() -> None:
    with pytest.raises(ApiError) as err:
        _patch(make_store(), CONFIGMAPS, "missing", MERGE_PATCH, {"data": {"x": "1"}})
    assert err.value.code == 404


def test_json_patch_operations() -> None:
    store = make_store()
    store.create(CONFIGMAPS, "default", configmap("a", data={"a": "1", "b": "2"}, finalizers=["f/one"]))
    operations = [
        {"op": "test", "path": "/data/a", "value": "1"},
        {"op": "add", "path": "/metadata/annotations", "value": {}},
        {"op": "add", "path": "/metadata/annotations/example.com~1note", "value": "3"},
        {"op": "replace", "path": "/data/a", "value": "10"},
        {"op": "remove", "path": "/data/b"},
        {"op": "copy", "from": "/data/a", "path": "/data/copied"},
        {"op": "move", "from": "/data/copied", "path": "/data/moved"},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "f/two"},
        {"op": "add", "path": "/metadata/finalizers/0", "value": "f/zero"},
    ]
    patched = _patch(store, CONFIGMAPS, "a", JSON_PATCH, operations)
    assert patched["data"] == {"a": "10", "moved": "10"}
    assert patched["metadata"]["annotations"] == {"example.com/note": "3"}
    assert patched["metadata"]["finalizers"] == ["f/zero", "f/one", "f/two"]


@pytest.mark.parametrize(
    ("operations", "message"),
    [
        ([{"op": "test", "path": "/data/a", "value": "2"}], "testing value /data/a failed: test failed"),
        ([{"op": "remove", "path": "/data/nope"}], "remove operation does not apply: doc is missing path: /data/nope"),
        ([{"op": "replace", "path": "/spec/x", "value": 1}], "replace operation does not apply: doc is missing path"),
        ([{"op": "frobnicate", "path": "/data"}], "Unexpected kind: frobnicate"),
    ],
)
def test_json_patch_that_does_not_apply_is_422(operations: list[dict[str, Any]], message: str) -> None:
    store = make_store()
    store.create(CONFIGMAPS, "default", configmap("a", data={"a": "1"}))
    server_log = io.StringIO()
    log.configure(2, server_log)
    try:
        with pytest.raises(ApiError) as err:
            _patch(store, CONFIGMAPS, "a", JSON_PATCH, operations)
    finally:
        log.configure(0)
    assert (err.value.code, err.value.reason, err.value.details) == (422, "Invalid", {}), "kube-apiserver's answer"
    assert message in server_log.getvalue(), "which operation failed is in the server's log"
    assert store.get(CONFIGMAPS, "default", "a")["data"] == {"a": "1"}


def test_malformed_patches_are_400() -> None:
    store = make_store()
    store.create(CONFIGMAPS, "default", configmap("a"))
    for patch_type, body in ((MERGE_PATCH, "{not json"), (JSON_PATCH, '{"op": "add"}'), (MERGE_PATCH, "[1]")):
        with pytest.raises(ApiError) as err:
            _patch(store, CONFIGMAPS, "a", patch_type, body)
        assert err.value.code == 400


def test_strategic_merge_patch_merges_containers_by_name() -> None:
    store = make_store()
    containers = [{"name": "a", "image": "img/a:1"}, {"name": "b", "image": "img/b:1"}]
    store.create(PODS, "default", pod("p", spec={"containers": containers}))
    patched = _patch(
        store, PODS, "p", STRATEGIC_MERGE_PATCH, {"spec": {"containers": [{"name": "b", "image": "img/b:2"}]}}
    )
    assert [(c["name"], c["image"]) for c in patched["spec"]["containers"]] == [("a", "img/a:1"), ("b", "img/b:2")]


def test_strategic_merge_keys_of_container_lists() -> None:
    original = {
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    "ports": [{"containerPort": 80, "name": "http"}],
                    "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                },
            ],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "tolerations": [{"key": "old"}],
        }
    }
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "env": [
                        {"name": "B", "value": "20"},
                        {"name": "A", "$patch": "delete"},
                        {"name": "C", "value": "3"},
                    ],
                    "ports": [{"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443}],
                    "volumeMounts": [{"mountPath": "/data", "readOnly": True}],
                },
                {"name": "sidecar", "image": "img/side"},
            ],
            "volumes": [{"name": "cache", "emptyDir": {}}],
            "tolerations": [{"key": "new"}],
        }
    }
    merged = strategic_merge(original, patch)["spec"]
    main, sidecar = merged["containers"]
    assert main["env"] == [{"name": "B", "value": "20"}, {"name": "C", "value": "3"}]
    assert main["ports"] == [{"containerPort": 80, "name": "http", "protocol": "TCP"}, {"containerPort": 443}]
    assert main["volumeMounts"] == [{"name": "data", "mountPath": "/data", "readOnly": True}]
    assert sidecar == {"name": "sidecar", "image": "img/side"}
    assert [v["name"] for v in merged["volumes"]] == ["data", "cache"]
    assert merged["tolerations"] == [{"key": "new"}]
    assert original["spec"]["containers"][0]["env"][0] == {"name": "A", "value": "1"}  # input untouched


def test_strategic_merge_patch_directives_on_maps_and_finalizers() -> None:
    store = make_store()
    store.create(CONFIGMAPS, "default", configmap("a", data={"x": "1", "y": "2"}, finalizers=["f/a", "f/b"]))
    union = _patch(store, CONFIGMAPS, "a", STRATEGIC_MERGE_PATCH, {"metadata": {"finalizers": ["f/b", "f/c"]}})
    assert union["metadata"]["finalizers"] == ["f/a", "f/b", "f/c"]
    removed = _patch(
        store,
        CONFIGMAPS,
        "a",
        STRATEGIC_MERGE_PATCH,
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["f/a", "f/c"]}},
    )
    assert removed["metadata"]["finalizers"] == ["f/b"]
    retained = _patch(store, CONFIGMAPS, "a", STRATEGIC_MERGE_PATCH, {"data": {"$retainKeys": ["y", "z"], "z": "3"}})
    assert retained["data"] == {"y": "2", "z": "3"}
    replaced = _patch(store, CONFIGMAPS, "a", STRATEGIC_MERGE_PATCH, {"data": {"$patch": "replace", "only": "1"}})
    assert replaced["data"] == {"only": "1"}
    dropped = _patch(store, CONFIGMAPS, "a", STRATEGIC_MERGE_PATCH, {"data": {"$patch": "delete"}})
    assert "data" not in dropped


def test_strategic_merge_patch_of_owner_references_goes_by_uid() -> None:
    store = make_store()
    first = store.create(CONFIGMAPS, "default", configmap("first"))
    second = store.create(CONFIGMAPS, "default", configmap("second"))
    store.create(CONFIGMAPS, "default", configmap("child", ownerReferences=[owner_reference(first)]))
    patch = {"metadata": {"ownerReferences": [{**owner_reference(first), "controller": True}, owner_reference(second)]}}
    patched = _patch(store, CONFIGMAPS, "child", STRATEGIC_MERGE_PATCH, patch)
    assert [(r["name"], r.get("controller")) for r in patched["metadata"]["ownerReferences"]] == [
        ("first", True),
        ("second", None),
    ]


def test_strategic_merge_patch_of_conditions_through_the_status_subresource() -> None:
    store = make_store()
    conditions = [{"type": "Ready", "status": "False"}, {"type": "MemoryPressure", "status": "False"}]
    store.create(NODES, None, _node(status={"conditions": conditions}))
    patch = {
        "spec": {"unschedulable": True},
        "status": {
            "$setElementOrder/conditions": [{"type": "MemoryPressure"}, {"type": "Ready"}, {"type": "DiskPressure"}],
            "conditions": [{"type": "Ready", "status": "True"}, {"type": "DiskPressure", "status": "False"}],
        },
    }
    patched = _patch(store, NODES, "n1", STRATEGIC_MERGE_PATCH, patch, subresource="status")
    assert [(c["type"], c["status"]) for c in patched["status"]["conditions"]] == [
        ("MemoryPressure", "False"),
        ("Ready", "True"),
        ("DiskPressure", "False"),
    ]
    assert "unschedulable" not in patched.get("spec", {})
    delete = {"status": {"conditions": [{"type": "DiskPressure", "$patch": "delete"}]}}
    trimmed = _patch(store, NODES, "n1", STRATEGIC_MERGE_PATCH, delete, subresource="status")
    assert [c["type"] for c in trimmed["status"]["conditions"]] == ["MemoryPressure", "Ready"]
    replace = {"status": {"conditions": [{"$patch": "replace"}, {"type": "Only", "status": "True"}]}}
    only = _patch(store, NODES, "n1", STRATEGIC_MERGE_PATCH, replace, subresource="status")
    # unset times are null, as kube-apiserver writes a zero metav1.Time (a struct, which omitempty keeps)
    unset = {"lastHeartbeatTime": None, "lastTransitionTime": None}
    assert only["status"]["conditions"] == [{"type": "Only", "status": "True", **unset}]


def test_resource_kinds_accept_strategic_merge_and_reserved_for_merges_by_uid() -> None:
    store = make_store()
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
    }
    store.create(RESOURCECLAIMS, "default", claim)
    allocation = {
        "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0"}]}
    }
    first = {"status": {"allocation": allocation, "reservedFor": [{"resource": "pods", "name": "a", "uid": "uid-a"}]}}
    _patch(store, RESOURCECLAIMS, "c", STRATEGIC_MERGE_PATCH, first, subresource="status")
    second = {"status": {"reservedFor": [{"resource": "pods", "name": "b", "uid": "uid-b"}]}}
    patched = _patch(store, RESOURCECLAIMS, "c", STRATEGIC_MERGE_PATCH, second, subresource="status")
    assert [consumer["uid"] for consumer in patched["status"]["reservedFor"]] == ["uid-a", "uid-b"]


def test_unsupported_patch_types_are_415() -> None:
    store = make_store()
    store.create(CONFIGMAPS, "default", {"metadata": {"name": "c"}, "data": {}})
    with pytest.raises(ApiError) as err:
        _patch(store, CONFIGMAPS, "c", "text/plain", "x")
    assert (err.value.code, err.value.reason) == (415, "UnsupportedMediaType")
    assert err.value.message == "415: Unsupported Media Type", "kube-apiserver 1.36's words for a PATCH"


def test_a_patch_is_expressed_at_the_requested_version() -> None:
    store = make_store()
    store.create(RESOURCESLICES, None, resource_slice("s1", "n1"))
    body = json.dumps({"metadata": {"labels": {"seen": "v1beta1"}}}).encode()
    patched = store.patch(RESOURCESLICES, "v1beta1", None, "s1", MERGE_PATCH, body)
    assert patched["apiVersion"] == "resource.k8s.io/v1"
    assert patched["metadata"]["labels"] == {"seen": "v1beta1"}
    assert patched["spec"]["devices"] == [{"name": "gpu-0"}]


# -- server-side apply ---------------------------------------------------------------------------------------------

_APPLIED = """
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  labels:
    app: web
data:
  a: "1"
  b: "2"
"""


def test_apply_needs_a_field_manager() -> None:
    with pytest.raises(ApiError) as err:
        _patch(make_store(), CONFIGMAPS, "cfg", APPLY_PATCH, _APPLIED)
    assert (err.value.code, err.value.reason) == (422, "Invalid")
    assert err.value.message == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch'
    )


def test_apply_creates_and_records_the_managers_fields() -> None:
    store = make_store()
    created = _patch(store, CONFIGMAPS, "cfg", APPLY_PATCH, _APPLIED, field_manager="kubectl")
    assert created["data"] == {"a": "1", "b": "2"}
    assert created["metadata"]["labels"] == {"app": "web"}
    assert created["metadata"]["managedFields"] == [
        {
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "v1",
            "time": "2025-03-04T05:06:07Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:a": {}, "f:b": {}}, "f:metadata": {"f:labels": {"f:app": {}}}},
        }
    ]
    assert store.get(CONFIGMAPS, "default", "cfg") == created


def test_reapply_changes_values_and_removes_what_the_manager_no_longer_applies() -> None:
    clock = Clock()
    store = make_store(clock=clock)
    _patch(store, CONFIGMAPS, "cfg", APPLY_PATCH, _APPLIED, field_manager="kubectl")
    store.update(
        CONFIGMAPS,
        "default",
        "cfg",
        {**store.get(CONFIGMAPS, "default", "cfg"), "data": {"a": "1", "b": "2", "mine": "x"}},
    )
    clock.advance(60)
    reapplied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "10"}}
    result = _patch(store, CONFIGMAPS, "cfg", APPLY_PATCH, reapplied, field_manager="kubectl")
    assert result["data"] == {"a": "10", "mine": "x"}
    assert "labels" not in result["metadata"]
    (entry,) = result["metadata"]["managedFields"]
    assert entry["fieldsV1"] == {"f:data": {"f:a": {}}}
    assert entry["time"] == "2025-03-04T05:07:07Z"


def test_apply_conflicts_with_another_manager_unless_forced() -> None:
    store = make_store()
    _patch(store, CONFIGMAPS, "cfg", APPLY_PATCH, _APPLIED, field_manager="first")
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "changed", "c": "3"}}
    with pytest.raises(ApiError) as err:
        _patch(store, CONFIGMAPS, "cfg", APPLY_PATCH, other, field_manager="second")
    assert (err.value.code, err.value.reason) == (409, "Conflict")
    assert err.value.message == 'Apply failed with 1 conflict: conflict with "first": .data.a'

    same_value = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"a": "1"}}
    agreed = _patch(store, CONFIGMAPS, "cfg", APPLY_PATCH, same_value, field_manager="third")  # no conflict
    assert [e["manager"] for e in agreed["metadata"]["managedFields"]] == ["first", "third"]

    forced = _patch(store, CONFIGMAPS, "cfg", APPLY_PATCH, other, field_manager="second", force=True)
    assert forced["data"] == {"a": "changed", "b": "2", "c": "3"}
    owners = {e["manager"]: e["fieldsV1"] for e in forced["metadata"]["managedFields"]}
    assert owners["first"] == {"f:data": {"f:b": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}
    assert owners["second"] == {"f:data": {"f:a": {}, "f:c": {}}}
    assert "third" not in owners  # it owned only what was taken over


def test_apply_of_a_status_with_merge_keys() -> None:
    store = make_store()
    store.create(NODES, None, _node(status={"conditions": [{"type": "Ready", "status": "False"}]}))
    applied = _node(status={"conditions": [{"type": "Ready", "status": "True"}]})
    result = _patch(store, NODES, "n1", APPLY_PATCH, applied, field_manager="kubelet", subresource="status")
    assert result["status"]["conditions"] == [{"type": "Ready", "status": "True"}]
    (entry,) = result["metadata"]["managedFields"]
    assert entry["subresource"] == "status"
    assert entry["fieldsV1"] == {
        "f:status": {"f:conditions": {'k:{"type":"Ready"}': {".": {}, "f:status": {}, "f:type": {}}}}
    }


def test_apply_honours_a_resource_version_and_checks_the_identity() -> None:
    store = make_store()
    created = _patch(store, CONFIGMAPS, "cfg", APPLY_PATCH, _APPLIED, field_manager="m")
    stale = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "resourceVersion": "1"}}
    with pytest.raises(ApiError) as err:
        _patch(store, CONFIGMAPS, "cfg", APPLY_PATCH, stale, field_manager="m")
    assert err.value.code == 409
    wrong_version = {"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "cfg"}}
    with pytest.raises(ApiError) as err:
        _patch(store, CONFIGMAPS, "cfg", APPLY_PATCH, wrong_version, field_manager="m")
    assert err.value.code == 400
    wrong_name = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}}
    with pytest.raises(ApiError) as err:
        _patch(store, CONFIGMAPS, "cfg", APPLY_PATCH, wrong_name, field_manager="m")
    assert err.value.code == 400
    assert store.get(CONFIGMAPS, "default", "cfg") == created


def test_apply_to_a_kind_without_strategic_merge_uses_merge_semantics() -> None:
    store = make_store()
    applied = resource_slice("s1", "n1")
    created = _patch(store, RESOURCESLICES, "s1", APPLY_PATCH, applied, field_manager="driver")
    assert created["spec"]["devices"] == [{"name": "gpu-0"}]
    assert created["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:devices"] == {}
    applied["spec"]["devices"] = [{"name": "gpu-1"}]
    updated = _patch(store, RESOURCESLICES, "s1", APPLY_PATCH, applied, field_manager="driver")
    assert updated["spec"]["devices"] == [{"name": "gpu-1"}]
