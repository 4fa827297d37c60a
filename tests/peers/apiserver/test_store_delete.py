"""Deletion: finalizers, graceful pod deletion, preconditions, garbage collection, namespace lifecycle."""

from __future__ import annotations

from typing import Any

import pytest
from test_store_support import (
    CONFIGMAPS,
    NAMESPACES,
    PODS,
    Clock,
    configmap,
    make_store,
    names,
    owner_reference,
    pod,
)

from kubelet_dra.peers.apiserver.status import ApiError
from kubelet_dra.peers.apiserver.store import Store


def _exists(store: Store, name: str, rt: Any = CONFIGMAPS, namespace: str = "default") -> bool:
    try:
        store.get(rt, namespace, name)
    except ApiError as err:
        assert err.code == 404
        return False
    return True


def test_delete_removes_the_object_at_a_new_resource_version() -> None:
    store = make_store()
    created = store.create(CONFIGMAPS, "default", configmap("a"))
    deleted = store.delete(CONFIGMAPS, "default", "a")
    assert deleted["metadata"]["uid"] == created["metadata"]["uid"]
    assert deleted["metadata"]["resourceVersion"] == str(store.resource_version)
    assert not _exists(store, "a")
    with pytest.raises(ApiError) as err:
        store.delete(CONFIGMAPS, "default", "a")
    assert err.value.code == 404


def test_finalizers_keep_a_deleted_object_until_an_update_removes_them() -> None:
    clock = Clock()
    store = make_store(clock=clock)
    store.create(CONFIGMAPS, "default", configmap("a", finalizers=["example.com/hold"]))
    clock.advance(10)
    marked = store.delete(CONFIGMAPS, "default", "a")
    assert marked["metadata"]["deletionTimestamp"] == "2025-03-04T05:06:17Z"
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 0
    assert "generation" not in marked["metadata"], "a ConfigMap keeps none"
    assert store.get(CONFIGMAPS, "default", "a") == marked

    assert store.delete(CONFIGMAPS, "default", "a") == marked  # deleting again changes nothing
    with pytest.raises(ApiError) as err:
        store.update(CONFIGMAPS, "default", "a", configmap("a", finalizers=["example.com/hold", "example.com/more"]))
    assert err.value.code == 422
    assert "no new finalizers can be added if the object is being deleted" in err.value.message

    released = store.update(CONFIGMAPS, "default", "a", configmap("a"))
    assert released["metadata"]["resourceVersion"] == str(store.resource_version)
    assert not _exists(store, "a")


def test_a_pod_bound_to_a_node_is_deleted_gracefully() -> None:
    clock = Clock()
    store = make_store(clock=clock)
    store.create(PODS, "default", pod("p", node="n1"))
    marked = store.delete(PODS, "default", "p")
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 30
    assert marked["metadata"]["deletionTimestamp"] == "2025-03-04T05:06:37Z"
    assert _exists(store, "p", PODS)

    clock.advance(5)
    shortened = store.delete(PODS, "default", "p", grace_period_seconds=10)
    assert shortened["metadata"]["deletionGracePeriodSeconds"] == 10
    assert shortened["metadata"]["deletionTimestamp"] == "2025-03-04T05:06:22Z"
    assert store.delete(PODS, "default", "p", grace_period_seconds=20) == shortened  # grace only shortens

    uid = marked["metadata"]["uid"]
    finished = store.delete(PODS, "default", "p", grace_period_seconds=0, preconditions={"uid": uid})
    assert finished["metadata"]["uid"] == uid
    assert not _exists(store, "p", PODS)


def test_grace_period_comes_from_the_request_then_the_pod_spec() -> None:
    store = make_store()
    store.create(PODS, "default", pod("short", node="n1", spec={"terminationGracePeriodSeconds": 5}))
    store.create(PODS, "default", pod("asked", node="n1"))
    assert store.delete(PODS, "default", "short")["metadata"]["deletionGracePeriodSeconds"] == 5
    assert (
        store.delete(PODS, "default", "asked", grace_period_seconds=12)["metadata"]["deletionGracePeriodSeconds"] == 12
    )


def test_unbound_and_finished_pods_are_deleted_at_once() -> None:
    store = make_store()
    store.create(PODS, "default", pod("unbound"))
    done = store.create(PODS, "default", pod("done", node="n1"))
    store.update(PODS, "default", "done", {**done, "status": {"phase": "Succeeded"}}, subresource="status")
    store.delete(PODS, "default", "unbound")
    store.delete(PODS, "default", "done")
    assert not _exists(store, "unbound", PODS)
    assert not _exists(store, "done", PODS)


def test_a_finalizer_keeps_a_pod_after_its_grace_period() -> None:
    store = make_store()
    store.create(PODS, "default", pod("p", node="n1", finalizers=["example.com/hold"]))
    store.delete(PODS, "default", "p")
    held = store.delete(PODS, "default", "p", grace_period_seconds=0)
    assert held["metadata"]["deletionGracePeriodSeconds"] == 0
    store.update(PODS, "default", "p", {**held, "metadata": {**held["metadata"], "finalizers": []}})
    assert not _exists(store, "p", PODS)


def test_delete_preconditions_are_409() -> None:
    store = make_store()
    created = store.create(CONFIGMAPS, "default", configmap("a"))
    rv = created["metadata"]["resourceVersion"]
    with pytest.raises(ApiError) as err:
        store.delete(CONFIGMAPS, "default", "a", preconditions={"uid": "other"})
    assert (err.value.code, err.value.reason) == (409, "Conflict")
    assert err.value.message == (
        f'Operation cannot be fulfilled on ConfigMap "a": the UID in the precondition (other) does not match the UID'
        f" in record ({created['metadata']['uid']}). The object might have been deleted and then recreated"
    )
    with pytest.raises(ApiError) as err:
        store.delete(CONFIGMAPS, "default", "a", preconditions={"resourceVersion": "1"})
    assert err.value.message.endswith(
        f"the ResourceVersion in the precondition (1) does not match the ResourceVersion in record ({rv})."
        " The object might have been modified"
    )
    store.delete(CONFIGMAPS, "default", "a", preconditions={"uid": created["metadata"]["uid"], "resourceVersion": rv})
    assert not _exists(store, "a")


def test_dry_run_delete_keeps_the_object() -> None:
    store = make_store()
    store.create(CONFIGMAPS, "default", configmap("a"))
    store.delete(CONFIGMAPS, "default", "a", dry_run=True)
    assert _exists(store, "a")


def _family(store: Store, *, child_finalizers: list[str] | None = None) -> dict[str, Any]:
    """owner ← child ← grandchild (ownerReferences), all ConfigMaps in "default"."""
    owner = store.create(CONFIGMAPS, "default", configmap("owner"))
    child_meta: dict[str, Any] = {"ownerReferences": [owner_reference(owner)]}
    if child_finalizers:
        child_meta["finalizers"] = child_finalizers
    child = store.create(CONFIGMAPS, "default", configmap("child", **child_meta))
    store.create(CONFIGMAPS, "default", configmap("grandchild", ownerReferences=[owner_reference(child)]))
    return owner


def test_background_deletion_collects_dependents_after_the_owner() -> None:
    store = make_store()
    _family(store)
    store.create(CONFIGMAPS, "default", configmap("bystander"))
    store.delete(CONFIGMAPS, "default", "owner", propagation_policy="Background")
    assert names(store.list(CONFIGMAPS, "default").items) == ["bystander"]


def test_a_dependent_with_another_live_owner_only_loses_the_reference() -> None:
    store = make_store()
    first = store.create(CONFIGMAPS, "default", configmap("first"))
    second = store.create(CONFIGMAPS, "default", configmap("second"))
    refs = [owner_reference(first), owner_reference(second)]
    store.create(CONFIGMAPS, "default", configmap("shared", ownerReferences=refs))
    store.delete(CONFIGMAPS, "default", "first")
    shared = store.get(CONFIGMAPS, "default", "shared")
    assert shared["metadata"]["ownerReferences"] == [owner_reference(second)]


def test_foreground_deletion_waits_for_the_dependents() -> None:
    store = make_store()
    _family(store, child_finalizers=["example.com/hold"])
    waiting = store.delete(CONFIGMAPS, "default", "owner", propagation_policy="Foreground")
    assert waiting["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert waiting["metadata"]["deletionTimestamp"]
    child = store.get(CONFIGMAPS, "default", "child")
    assert child["metadata"]["deletionTimestamp"]
    assert not _exists(store, "grandchild")

    store.update(CONFIGMAPS, "default", "child", {**child, "metadata": {**child["metadata"], "finalizers": []}})
    assert names(store.list(CONFIGMAPS, "default").items) == []


def test_foreground_deletion_without_dependents_is_immediate() -> None:
    store = make_store()
    store.create(CONFIGMAPS, "default", configmap("alone"))
    store.delete(CONFIGMAPS, "default", "alone", propagation_policy="Foreground")
    assert not _exists(store, "alone")


def test_orphan_deletion_keeps_dependents_without_the_reference() -> None:
    store = make_store()
    _family(store)
    store.delete(CONFIGMAPS, "default", "owner", propagation_policy="Orphan")
    child = store.get(CONFIGMAPS, "default", "child")
    assert "ownerReferences" not in child["metadata"]
    assert names(store.list(CONFIGMAPS, "default").items) == ["child", "grandchild"]


def test_an_unknown_propagation_policy_is_422() -> None:
    store = make_store()
    store.create(CONFIGMAPS, "default", configmap("a"))
    with pytest.raises(ApiError) as err:
        store.delete(CONFIGMAPS, "default", "a", propagation_policy="Sideways")
    assert err.value.code == 422
    assert 'propagationPolicy: Unsupported value: "Sideways"' in err.value.message


def test_deleting_a_namespace_deletes_its_contents() -> None:
    store = make_store(namespaces=("default", "team"))
    store.create(CONFIGMAPS, "team", configmap("a"))
    store.create(PODS, "team", pod("unbound"))
    store.create(CONFIGMAPS, "default", configmap("elsewhere"))
    store.delete(NAMESPACES, None, "team")
    assert not _exists(store, "team", NAMESPACES, "")
    assert store.list(CONFIGMAPS, "team").items == []
    assert names(store.list(CONFIGMAPS, None).items) == ["elsewhere"]


def test_a_namespace_terminates_until_its_last_pod_is_gone() -> None:
    store = make_store(namespaces=("default", "team"))
    store.create(PODS, "team", pod("running", node="n1"))
    terminating = store.delete(NAMESPACES, None, "team")
    assert terminating["status"]["phase"] == "Terminating"
    assert terminating["metadata"]["deletionTimestamp"]
    with pytest.raises(ApiError) as err:
        store.create(CONFIGMAPS, "team", configmap("late"))
    assert err.value.code == 403
    assert "unable to create new content in namespace team because it is being terminated" in err.value.message

    assert store.get(PODS, "team", "running")["metadata"]["deletionTimestamp"]
    store.delete(PODS, "team", "running", grace_period_seconds=0)  # the kubelet finishes the pod
    assert not _exists(store, "team", NAMESPACES, "")


def test_the_system_namespaces_may_not_be_deleted() -> None:
    store = make_store()
    with pytest.raises(ApiError) as err:
        store.delete(NAMESPACES, None, "default")
    assert (err.value.code, err.value.message) == (
        403,
        'namespaces "default" is forbidden: this namespace may not be deleted',
    )
    assert _exists(store, "default", NAMESPACES, "")


def test_delete_collection_deletes_what_the_selectors_select() -> None:
    store = make_store()
    for name, tier in (("a", "web"), ("b", "web"), ("c", "db")):
        store.create(CONFIGMAPS, "default", configmap(name, labels={"tier": tier}))
    deleted = store.delete_collection(CONFIGMAPS, "default", label_selector="tier=web")
    assert names(deleted) == ["a", "b"]
    assert names(store.list(CONFIGMAPS, "default").items) == ["c"]
    store.create(PODS, "default", pod("bound", node="n1"))
    (pending,) = store.delete_collection(PODS, "default")
    assert pending["metadata"]["deletionGracePeriodSeconds"] == 30
