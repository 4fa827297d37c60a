"""Lists: order, namespaces, label and field selectors (and their errors), paging with continue tokens."""

from __future__ import annotations

import pytest
from test_store_support import (
    CONFIGMAPS,
    NODES,
    PODS,
    RESOURCESLICES,
    Clock,
    configmap,
    make_store,
    names,
    pod,
)

from kubelet_dra.peers.apiserver.paging import SNAPSHOT_TTL, ContinueExpired
from kubelet_dra.peers.apiserver.status import ApiError
from kubelet_dra.peers.apiserver.store import Store
from kubelet_dra.workbench.testbed.serverthread import resource_slice_manifest as resource_slice


def _labelled_store() -> Store:
    store = make_store()
    labels = {
        "a": {"app": "web", "tier": "front", "replicas": "3"},
        "b": {"app": "web", "tier": "back", "replicas": "10"},
        "c": {"app": "db"},
        "d": {},
    }
    for name, labels_of in labels.items():
        store.create(CONFIGMAPS, "default", configmap(name, labels=labels_of))
    return store


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", ["a", "b", "c", "d"]),
        ("app=web", ["a", "b"]),
        ("app==web", ["a", "b"]),
        ("app!=web", ["c", "d"]),
        ("app in (db, web)", ["a", "b", "c"]),
        ("app notin (web)", ["c", "d"]),
        ("tier", ["a", "b"]),
        ("!tier", ["c", "d"]),
        ("app=web,tier=back", ["b"]),
        ("replicas>5", ["b"]),
        ("replicas<5", ["a"]),
        ("app notin (), !tier", ["c", "d"]),
    ],
)
def test_label_selectors(selector: str, expected: list[str]) -> None:
    result = _labelled_store().list(CONFIGMAPS, "default", label_selector=selector)
    assert names(result.items) == expected


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("app in", "unable to parse requirement: found '' expected: '('"),
        ("app=a b", "found 'b', expected: ',' or 'end of string'"),
        ("app ~ x", "unable to parse requirement: found '~', expected: in, notin, =, ==, !=, gt, lt"),
        ("a=====b", "unable to parse requirement: found '==', expected: identifier"),
        ("app=web,", "found '', expected: identifier after ','"),
        ("-bad=x", 'unable to parse requirement: <nil>: Invalid value: "-bad": name part must consist of'),
        ("app=not/valid", 'unable to parse requirement: values[0][app]: Invalid value: "not/valid": a valid label'),
        ("n>x", "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators"),
    ],
)
def test_label_selector_errors_are_400_with_the_parsers_words(selector: str, message: str) -> None:
    with pytest.raises(ApiError) as err:
        make_store().list(CONFIGMAPS, "default", label_selector=selector)
    assert (err.value.code, err.value.reason) == (400, "BadRequest")
    assert err.value.message.startswith(message)


def test_field_selectors_on_metadata_and_declared_fields() -> None:
    store = make_store(namespaces=("default", "other"))
    store.create(PODS, "default", pod("on-n1", node="n1"))
    store.create(PODS, "default", pod("on-n2", node="n2"))
    store.create(PODS, "default", pod("pending"))
    store.create(PODS, "other", pod("elsewhere", node="n1"))

    def selected(selector: str, namespace: str | None = None) -> list[str]:
        return names(store.list(PODS, namespace, field_selector=selector).items)

    assert selected("spec.nodeName=n1") == ["on-n1", "elsewhere"]
    assert selected("spec.nodeName==n1", "default") == ["on-n1"]
    assert selected("spec.nodeName=", "default") == ["pending"]
    assert selected("spec.nodeName!=n1,metadata.namespace=default") == ["on-n2", "pending"]
    assert selected("metadata.name=on-n2") == ["on-n2"]
    assert selected("status.phase=Pending,spec.hostNetwork=false", "other") == ["elsewhere"]


def test_field_selectors_on_resource_slices() -> None:
    store = make_store()
    store.create(RESOURCESLICES, None, resource_slice("s1", "n1"))
    store.create(RESOURCESLICES, None, resource_slice("s2", "n2", driver="net.example.com"))
    assert names(store.list(RESOURCESLICES, None, field_selector="spec.driver=net.example.com").items) == ["s2"]
    assert names(store.list(RESOURCESLICES, None, field_selector="spec.nodeName=n1").items) == ["s1"]


def test_field_selector_errors() -> None:
    store = make_store()
    with pytest.raises(ApiError) as err:
        store.list(CONFIGMAPS, "default", field_selector="spec.nodeName=n1")
    assert (err.value.code, err.value.message) == (400, "field label not supported: spec.nodeName")
    with pytest.raises(ApiError) as err:
        store.list(PODS, "default", field_selector="spec.nodeName")
    assert err.value.message == "invalid selector: 'spec.nodeName'; can't understand 'spec.nodeName'"


def test_lists_are_in_storage_key_order_and_scoped_to_a_namespace() -> None:
    store = make_store(namespaces=("default", "b", "b-x"))
    for namespace, name in (("default", "z"), ("b-x", "a"), ("b", "y"), ("b", "c")):
        store.create(CONFIGMAPS, namespace, configmap(name))
    everything = store.list(CONFIGMAPS, None)
    # "<namespace>/<name>" order, as etcd keys sort: "b-x/a" < "b/c" because "-" < "/".
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in everything.items] == [
        ("b-x", "a"),
        ("b", "c"),
        ("b", "y"),
        ("default", "z"),
    ]
    assert everything.resource_version == str(store.resource_version)
    assert everything.continue_token == ""
    assert everything.remaining is None
    assert names(store.list(CONFIGMAPS, "b").items) == ["c", "y"]


def _read_all(store: Store, limit: int, **selectors: str) -> tuple[list[str], list[int | None]]:
    seen, remaining, token = [], [], ""
    while True:
        page = store.list(NODES, None, limit=limit, continue_token=token, **selectors)
        assert len(page.items) <= limit
        seen.extend(names(page.items))
        remaining.append(page.remaining)
        token = page.continue_token
        if not token:
            return seen, remaining


def _nodes(store: Store, count: int) -> None:
    for i in range(count):
        labels = {"even": str(i % 2 == 0).lower()}
        store.create(
            NODES, None, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i:02d}", "labels": labels}}
        )


def test_paging_returns_everything_once_with_remaining_counts() -> None:
    store = make_store()
    _nodes(store, 7)
    seen, remaining = _read_all(store, 3)
    assert seen == [f"n{i:02d}" for i in range(7)]
    assert remaining == [4, 1, None]


def test_paging_with_selectors_ends_exactly_and_leaves_remaining_unset() -> None:
    store = make_store()
    _nodes(store, 8)
    seen, remaining = _read_all(store, 2, label_selector="even=true")
    assert seen == ["n00", "n02", "n04", "n06"]
    assert remaining == [None, None]


def test_pages_come_from_the_first_pages_snapshot() -> None:
    store = make_store()
    _nodes(store, 4)
    first = store.list(NODES, None, limit=2)
    store.delete(NODES, None, "n03")
    store.create(NODES, None, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n99"}})
    second = store.list(NODES, None, limit=2, continue_token=first.continue_token)
    assert names(second.items) == ["n02", "n03"]
    assert second.resource_version == first.resource_version
    assert second.continue_token == ""


def test_an_expired_snapshot_gets_410_with_a_token_to_finish_inconsistently() -> None:
    clock = Clock()
    store = make_store(clock=clock)
    _nodes(store, 4)
    first = store.list(NODES, None, limit=2)
    store.create(NODES, None, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n99"}})
    clock.advance(SNAPSHOT_TTL.total_seconds() + 1)
    store.list(NODES, None, limit=1)  # any later paged list drops snapshots past their time
    with pytest.raises(ContinueExpired) as err:
        store.list(NODES, None, limit=2, continue_token=first.continue_token)
    status = err.value.to_status()
    assert (status["code"], status["reason"]) == (410, "Expired")
    assert status["message"].startswith("The provided continue parameter is too old")
    rest = store.list(NODES, None, continue_token=status["metadata"]["continue"])
    assert names(rest.items) == ["n02", "n03", "n99"]


def test_an_old_token_still_works_when_nothing_changed() -> None:
    clock = Clock()
    store = make_store(clock=clock)
    _nodes(store, 3)
    first = store.list(NODES, None, limit=2)
    clock.advance(SNAPSHOT_TTL.total_seconds() + 1)
    store.list(NODES, None, limit=1)
    store.create(CONFIGMAPS, "default", configmap("other-resource"))
    assert names(store.list(NODES, None, limit=2, continue_token=first.continue_token).items) == ["n02"]


def test_a_malformed_continue_token_is_400() -> None:
    with pytest.raises(ApiError) as err:
        make_store().list(NODES, None, continue_token="not-a-token")
    assert err.value.code == 400
    assert err.value.message.startswith("invalid continue token")
