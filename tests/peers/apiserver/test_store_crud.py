"""Create, get, update: identity, resourceVersions, generation, generateName, status rules and errors."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest
from test_store_support import (
    CONFIGMAPS,
    NAMESPACES,
    NODES,
    PODS,
    RESOURCECLAIMS,
    RESOURCESLICES,
    Clock,
    configmap,
    make_store,
    pod,
)

from kubelet_dra.peers.apiserver.status import ApiError
from kubelet_dra.peers.apiserver.writerules import GENERATE_NAME_ALPHABET
from kubelet_dra.workbench.testbed.serverthread import resource_slice_manifest


def test_create_assigns_identity_and_a_global_resource_version() -> None:
    clock = Clock()
    store = make_store(clock=clock)
    first = store.create(CONFIGMAPS, "default", configmap("a", data={"k": "v"}))
    clock.advance(61)
    second = store.create(NODES, None, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})

    assert uuid.UUID(first["metadata"]["uid"]).version == 4
    assert first["metadata"]["uid"] != second["metadata"]["uid"]
    assert first["metadata"]["creationTimestamp"] == "2025-03-04T05:06:07Z"
    assert second["metadata"]["creationTimestamp"] == "2025-03-04T05:07:08Z"
    assert "generation" not in first["metadata"], "kube-apiserver keeps no generation for a ConfigMap"
    assert first["metadata"]["namespace"] == "default"
    assert int(second["metadata"]["resourceVersion"]) == int(first["metadata"]["resourceVersion"]) + 1
    assert store.resource_version == int(second["metadata"]["resourceVersion"])
    assert store.get(CONFIGMAPS, "default", "a") == first


def test_get_of_a_missing_object_is_the_404_kube_apiserver_sends(recorded: Any) -> None:
    store = make_store()
    with pytest.raises(ApiError) as err:
        store.get(PODS, "default", "doesnotexist")
    assert err.value.to_status() == recorded("status-notfound.json")


def test_create_twice_is_409_already_exists() -> None:
    store = make_store()
    store.create(CONFIGMAPS, "default", configmap("a"))
    with pytest.raises(ApiError) as err:
        store.create(CONFIGMAPS, "default", configmap("a"))
    assert (err.value.code, err.value.reason, err.value.message) == (
        409,
        "AlreadyExists",
        'configmaps "a" already exists',
    )


def test_namespaced_create_needs_the_namespace() -> None:
    store = make_store()
    with pytest.raises(ApiError) as err:
        store.create(CONFIGMAPS, "nowhere", configmap("a"))
    assert (err.value.code, err.value.message) == (404, 'namespaces "nowhere" not found')


def test_create_refuses_a_resource_version_and_an_anonymous_object() -> None:
    store = make_store()
    with pytest.raises(ApiError) as err:
        store.create(CONFIGMAPS, "default", configmap("a", resourceVersion="5"))
    assert err.value.code == 500
    assert "resourceVersion should not be set on objects to be created" in err.value.message
    with pytest.raises(ApiError) as err:
        store.create(CONFIGMAPS, "default", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}})
    assert err.value.code == 422
    assert "name or generateName is required" in err.value.message


def test_create_in_another_namespace_than_the_body_says_is_400() -> None:
    store = make_store(namespaces=("default", "other"))
    with pytest.raises(ApiError) as err:
        store.create(CONFIGMAPS, "default", configmap("a", namespace="other"))
    assert err.value.code == 400


def test_generate_name_appends_five_characters_of_kubes_alphabet() -> None:
    store = make_store()
    created = {
        store.create(CONFIGMAPS, "default", configmap("", generateName="cfg-"))["metadata"]["name"] for _ in range(20)
    }
    assert len(created) == 20
    for name in created:
        assert re.fullmatch(f"cfg-[{GENERATE_NAME_ALPHABET}]{{5}}", name)


def test_generate_name_retries_when_the_generated_name_is_taken() -> None:
    probe = make_store(seed=3)
    taken = probe.create(CONFIGMAPS, "default", configmap("", generateName="x-"))["metadata"]["name"]
    store = make_store(seed=3)  # same randomness: its first generated name would be ``taken``
    store.create(CONFIGMAPS, "default", configmap(taken))
    generated = store.create(CONFIGMAPS, "default", configmap("", generateName="x-"))["metadata"]["name"]
    assert generated != taken
    assert generated.startswith("x-")


def test_dry_run_create_stores_nothing() -> None:
    store = make_store()
    before = store.resource_version
    result = store.create(CONFIGMAPS, "default", configmap("a"), dry_run=True)
    assert result["metadata"]["name"] == "a"
    assert store.resource_version == before
    with pytest.raises(ApiError):
        store.get(CONFIGMAPS, "default", "a")


def test_update_with_a_stale_resource_version_is_409_conflict() -> None:
    store = make_store()
    created = store.create(CONFIGMAPS, "default", configmap("a", data={"k": "1"}))
    store.update(CONFIGMAPS, "default", "a", {**created, "data": {"k": "2"}})
    with pytest.raises(ApiError) as err:
        store.update(CONFIGMAPS, "default", "a", {**created, "data": {"k": "3"}})
    assert err.value.code == 409
    assert err.value.reason == "Conflict"
    assert err.value.message == (
        'Operation cannot be fulfilled on configmaps "a": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def test_update_without_resource_version_is_unconditional() -> None:
    store = make_store()
    store.create(CONFIGMAPS, "default", configmap("a", data={"k": "1"}))
    updated = store.update(CONFIGMAPS, "default", "a", configmap("a", data={"k": "2"}))
    assert updated["data"] == {"k": "2"}
    assert store.get(CONFIGMAPS, "default", "a")["data"] == {"k": "2"}


def test_update_keeps_server_owned_metadata() -> None:
    store = make_store()
    created = store.create(CONFIGMAPS, "default", configmap("a"))
    body = configmap("a", labels={"x": "y"}, creationTimestamp="1999-01-01T00:00:00Z", generation=40)
    updated = store.update(CONFIGMAPS, "default", "a", body)
    for field in ("uid", "creationTimestamp"):
        assert updated["metadata"][field] == created["metadata"][field]
    assert "generation" not in updated["metadata"], "a ConfigMap has none, whatever the client sends"
    assert updated["metadata"]["labels"] == {"x": "y"}


def test_update_errors() -> None:
    store = make_store()
    created = store.create(CONFIGMAPS, "default", configmap("a"))
    with pytest.raises(ApiError) as err:
        store.update(CONFIGMAPS, "default", "missing", configmap("missing"))
    assert err.value.code == 404
    with pytest.raises(ApiError) as err:
        store.update(CONFIGMAPS, "default", "a", configmap("b"))
    assert (err.value.code, err.value.message) == (
        400,
        "the name of the object (b) does not match the name on the URL (a)",
    )
    with pytest.raises(ApiError) as err:
        store.update(CONFIGMAPS, "default", "a", configmap("a", uid="not-the-uid"))
    assert err.value.code == 409
    assert "Key: /registry/configmaps/default/a, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed:" in (
        err.value.message
    )
    assert f"UID in precondition: not-the-uid, UID in object meta: {created['metadata']['uid']}" in err.value.message


def test_generation_counts_changes_outside_metadata_and_status() -> None:
    store = make_store()
    created = store.create(RESOURCESLICES, None, resource_slice_manifest("a"))
    assert created["metadata"]["generation"] == 1
    relabelled = store.update(
        RESOURCESLICES, None, "a", {**created, "metadata": {**created["metadata"], "labels": {"l": "1"}}}
    )
    assert relabelled["metadata"]["generation"] == 1
    spec = {**relabelled["spec"], "devices": [{"name": "gpu-7"}]}
    changed = store.update(RESOURCESLICES, None, "a", {**relabelled, "spec": spec})
    assert changed["metadata"]["generation"] == 2
    assert int(changed["metadata"]["resourceVersion"]) > int(relabelled["metadata"]["resourceVersion"])


def test_an_update_that_changes_nothing_keeps_the_resource_version() -> None:
    store = make_store()
    created = store.create(CONFIGMAPS, "default", configmap("a", data={"k": "1"}))
    again = store.update(CONFIGMAPS, "default", "a", configmap("a", data={"k": "1"}))
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert store.resource_version == int(created["metadata"]["resourceVersion"])


def test_main_update_keeps_status_and_status_update_keeps_the_rest() -> None:
    store = make_store()
    created = store.create(PODS, "default", pod("p", node="n1", labels={"app": "a"}))
    assert created["status"]["phase"] == "Pending"

    running = store.update(PODS, "default", "p", {**created, "status": {"phase": "Running"}}, subresource="status")
    assert running["status"]["phase"] == "Running"
    assert running["metadata"]["generation"] == 1

    tampered = {**running, "metadata": {**running["metadata"], "labels": {"app": "b"}}, "status": {"phase": "Failed"}}
    tampered["spec"] = {**running["spec"], "activeDeadlineSeconds": 5}
    via_status = store.update(PODS, "default", "p", tampered, subresource="status")
    assert via_status["status"]["phase"] == "Failed"
    assert via_status["metadata"]["labels"] == {"app": "a"}
    assert "activeDeadlineSeconds" not in via_status["spec"]

    via_main = store.update(
        PODS, "default", "p", {**tampered, "metadata": {**via_status["metadata"], "labels": {"app": "c"}}}
    )
    assert via_main["status"]["phase"] == "Failed"
    assert via_main["metadata"]["labels"] == {"app": "c"}


def test_status_is_not_settable_on_create_for_kinds_with_a_status_subresource() -> None:
    store = make_store()
    created = store.create(PODS, "default", {**pod("p"), "status": {"phase": "Running"}})
    assert created["status"]["phase"] == "Pending"
    ns = store.create(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}})
    assert ns["status"]["phase"] == "Active"
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"capacity": {"cpu": "4"}}}
    assert store.create(NODES, None, node)["status"]["capacity"] == {"cpu": "4"}


def test_status_subresource_exists_only_where_declared() -> None:
    store = make_store()
    created = store.create(CONFIGMAPS, "default", configmap("a"))
    with pytest.raises(ApiError) as err:
        store.update(CONFIGMAPS, "default", "a", created, subresource="status")
    assert err.value.code == 404
    assert RESOURCECLAIMS.has_status


def test_returned_objects_do_not_change_with_later_writes() -> None:
    store = make_store()
    created = store.create(CONFIGMAPS, "default", configmap("a", data={"k": "1"}))
    body = configmap("a", data={"k": "2"})
    store.update(CONFIGMAPS, "default", "a", body)
    body["data"]["k"] = "mutated after the call"
    assert created["data"] == {"k": "1"}
    assert store.get(CONFIGMAPS, "default", "a")["data"] == {"k": "2"}


def test_invalid_objects_are_rejected_with_422() -> None:
    store = make_store()
    with pytest.raises(ApiError) as err:
        store.create(PODS, "default", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}})
    assert (err.value.code, err.value.reason) == (422, "Invalid")
