"""Watches: replay from a resourceVersion, 410, initial events and bookmarks, selectors, slow consumers."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from test_store_support import CONFIGMAPS, PODS, configmap, make_store, pod

from kubelet_dra.peers.apiserver.status import ApiError
from kubelet_dra.peers.apiserver.watch import Watch


async def _take(watch: Watch, count: int) -> list[tuple[str, str]]:
    """The next ``count`` events as (type, name-or-resourceVersion)."""
    out = []
    for _ in range(count):
        event = await asyncio.wait_for(anext(watch), 1)
        metadata = event.object["metadata"]
        out.append((event.type, metadata.get("name") or metadata["resourceVersion"]))
    return out


async def _nothing_pending(watch: Watch) -> bool:
    try:
        await asyncio.wait_for(anext(watch), 0.02)
    except TimeoutError:
        return True
    return False


async def test_watch_from_a_resource_version_replays_what_came_after_it() -> None:
    store = make_store()
    store.create(CONFIGMAPS, "default", configmap("before"))
    since = str(store.resource_version)
    created = store.create(CONFIGMAPS, "default", configmap("a"))
    store.update(CONFIGMAPS, "default", "a", {**created, "data": {"k": "v"}})
    store.delete(CONFIGMAPS, "default", "a")
    store.create(PODS, "default", pod("other-resource"))
    watch = store.watch(CONFIGMAPS, "default", resource_version=since)
    assert await _take(watch, 3) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    store.create(CONFIGMAPS, "default", configmap("live"))
    assert await _take(watch, 1) == [("ADDED", "live")]


async def test_deleted_events_carry_the_deletions_resource_version() -> None:
    store = make_store()
    store.create(CONFIGMAPS, "default", configmap("a"))
    watch = store.watch(CONFIGMAPS, "default", resource_version=str(store.resource_version))
    store.delete(CONFIGMAPS, "default", "a")
    event = await anext(watch)
    assert event.type == "DELETED"
    assert event.object["metadata"]["resourceVersion"] == str(store.resource_version)


async def test_watch_from_before_the_history_is_410_like_kube(recorded: Any) -> None:
    store = make_store(history_size=3)
    oldest_watchable = store.resource_version
    for name in "abcd":
        store.create(CONFIGMAPS, "default", configmap(name))
    with pytest.raises(ApiError) as err:
        store.watch(CONFIGMAPS, "default", resource_version=str(oldest_watchable))
    expected = recorded("watch-too-old.json")["object"]
    assert err.value.to_status() == {**expected, "message": err.value.message}
    assert err.value.message == f"too old resource version: {oldest_watchable} ({oldest_watchable + 1})"
    watch = store.watch(CONFIGMAPS, "default", resource_version=str(oldest_watchable + 1))
    assert await _take(watch, 3) == [("ADDED", "b"), ("ADDED", "c"), ("ADDED", "d")]


async def test_watch_beyond_the_current_resource_version_is_504_too_large() -> None:
    store = make_store()
    with pytest.raises(ApiError) as err:
        store.watch(CONFIGMAPS, "default", resource_version=str(store.resource_version + 10))
    assert (err.value.code, err.value.reason) == (504, "Timeout")
    assert err.value.message.startswith("Timeout: Too large resource version")


@pytest.mark.parametrize("resource_version", ["", "0"])
async def test_watch_without_a_resource_version_starts_with_the_current_objects(resource_version: str) -> None:
    store = make_store(namespaces=("default", "other"))
    store.create(CONFIGMAPS, "default", configmap("a"))
    store.create(CONFIGMAPS, "default", configmap("b"))
    store.create(CONFIGMAPS, "other", configmap("c"))
    watch = store.watch(CONFIGMAPS, "default", resource_version=resource_version)
    store.create(CONFIGMAPS, "default", configmap("later"))
    assert await _take(watch, 3) == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "later")]
    assert await _nothing_pending(watch)


async def test_send_initial_events_ends_with_an_annotated_bookmark() -> None:
    store = make_store()
    store.create(CONFIGMAPS, "default", configmap("a"))
    snapshot_rv = str(store.resource_version)
    watch = store.watch(CONFIGMAPS, "default", send_initial_events=True, allow_bookmarks=True)
    store.create(CONFIGMAPS, "default", configmap("b"))
    added = await anext(watch)
    bookmark = await anext(watch)
    assert (added.type, added.object["metadata"]["name"]) == ("ADDED", "a")
    assert bookmark.type == "BOOKMARK"
    assert bookmark.object == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"resourceVersion": snapshot_rv, "annotations": {"k8s.io/initial-events-end": "true"}},
    }
    assert await _take(watch, 1) == [("ADDED", "b")]


async def test_send_initial_events_false_starts_from_now() -> None:
    store = make_store()
    store.create(CONFIGMAPS, "default", configmap("a"))
    watch = store.watch(CONFIGMAPS, "default", send_initial_events=False)
    assert await _nothing_pending(watch)


async def test_bookmarks_carry_only_the_resource_version_and_need_permission() -> None:
    store = make_store()
    allowed = store.watch(CONFIGMAPS, "default", resource_version=str(store.resource_version), allow_bookmarks=True)
    refused = store.watch(CONFIGMAPS, "default", resource_version=str(store.resource_version))
    store.create(CONFIGMAPS, "default", configmap("a"))
    allowed.bookmark()
    refused.bookmark()
    assert await _take(allowed, 1) == [("ADDED", "a")]
    bookmark = await anext(allowed)
    assert bookmark.type == "BOOKMARK"
    assert bookmark.object == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"resourceVersion": str(store.resource_version)},
    }
    assert await _take(refused, 1) == [("ADDED", "a")]
    assert await _nothing_pending(refused)


async def test_selector_watches_see_objects_enter_and_leave() -> None:
    store = make_store()
    created = store.create(CONFIGMAPS, "default", configmap("a", labels={"tier": "web"}))
    watch = store.watch(CONFIGMAPS, "default", label_selector="tier=web", resource_version=str(store.resource_version))

    def relabel(tier: str) -> None:
        current = store.get(CONFIGMAPS, "default", "a")
        store.update(
            CONFIGMAPS, "default", "a", {**current, "metadata": {**current["metadata"], "labels": {"tier": tier}}}
        )

    relabel("db")
    relabel("cache")
    relabel("web")
    store.update(CONFIGMAPS, "default", "a", {**store.get(CONFIGMAPS, "default", "a"), "data": {"k": "v"}})
    assert await _take(watch, 3) == [("DELETED", "a"), ("ADDED", "a"), ("MODIFIED", "a")]
    assert created["metadata"]["labels"] == {"tier": "web"}


async def test_field_selector_watch_follows_the_node() -> None:
    store = make_store()
    watch = store.watch(PODS, None, field_selector="spec.nodeName=n1", resource_version=str(store.resource_version))
    store.create(PODS, "default", pod("elsewhere", node="n2"))
    store.create(PODS, "default", pod("mine", node="n1"))
    assert await _take(watch, 1) == [("ADDED", "mine")]
    assert await _nothing_pending(watch)


async def test_watches_filed_under_a_field_value_see_exactly_what_a_selector_match_gives() -> None:
    store = make_store()
    since = str(store.resource_version)
    nodes = {
        name: store.watch(PODS, None, field_selector=f"spec.nodeName={name}", resource_version=since)
        for name in ("n1", "n2", "n3")
    }
    running = store.watch(PODS, None, field_selector="status.phase=Running", resource_version=since)
    live_on_n1 = store.watch(
        PODS, None, field_selector="status.phase!=Succeeded,spec.nodeName=n1", resource_version=since
    )
    closed = store.watch(PODS, None, field_selector="spec.nodeName=n1", resource_version=since)
    closed.close()

    def phase(name: str, value: str) -> None:
        current = store.get(PODS, "default", name)
        store.update(PODS, "default", name, {**current, "status": {"phase": value}}, subresource="status")

    store.create(PODS, "default", pod("a", node="n1"))
    store.create(PODS, "default", pod("b", node="n2"))
    phase("a", "Running")
    phase("b", "Running")
    phase("a", "Succeeded")
    store.delete(PODS, "default", "b", grace_period_seconds=0)
    assert await _take(nodes["n1"], 3) == [("ADDED", "a"), ("MODIFIED", "a"), ("MODIFIED", "a")]
    assert await _take(nodes["n2"], 3) == [("ADDED", "b"), ("MODIFIED", "b"), ("DELETED", "b")]
    assert await _take(running, 4) == [("ADDED", "a"), ("ADDED", "b"), ("DELETED", "a"), ("DELETED", "b")]
    assert await _take(live_on_n1, 3) == [("ADDED", "a"), ("MODIFIED", "a"), ("DELETED", "a")]
    for watch in (nodes["n3"], *nodes.values(), running, live_on_n1):
        assert await _nothing_pending(watch)
    assert [event async for event in closed] == []


async def test_a_slow_watcher_is_closed_without_holding_up_writers_or_others() -> None:
    store = make_store(watch_queue_size=3)
    since = str(store.resource_version)
    slow = store.watch(CONFIGMAPS, "default", resource_version=since)
    fast = store.watch(CONFIGMAPS, "default", resource_version=since)
    for i in range(3):
        store.create(CONFIGMAPS, "default", configmap(f"c{i}"))
    assert len(await _take(fast, 3)) == 3
    store.create(CONFIGMAPS, "default", configmap("overflow"))
    assert slow.overflowed
    assert [event async for event in slow] == []
    assert await _take(fast, 1) == [("ADDED", "overflow")]
    assert not fast.overflowed


async def test_close_ends_the_iteration_of_a_waiting_consumer() -> None:
    store = make_store()
    watch = store.watch(CONFIGMAPS, "default", resource_version=str(store.resource_version))
    consumer = asyncio.create_task(anext(watch, None))
    await asyncio.sleep(0)
    watch.close()
    assert await asyncio.wait_for(consumer, 1) is None
    store.create(CONFIGMAPS, "default", configmap("after-close"))
    assert [event async for event in watch] == []
