"""Persistence: a store reopened on the same data directory keeps its objects and its resourceVersion counter."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest
from test_store_support import CONFIGMAPS, NAMESPACES, PODS, Clock, configmap, namespace, owner_reference, pod

from kubelet_dra.apiserver.persistence import FILE_NAME, Persistence
from kubelet_dra.apiserver.status import ApiError
from kubelet_dra.apiserver.store import Store


def _open(data_dir: Path) -> tuple[Store, Persistence]:
    persistence = Persistence(data_dir)
    return Store(persistence, clock=Clock(), rng=random.Random()), persistence


def test_a_reopened_store_keeps_objects_and_resource_versions_keep_increasing(tmp_path: Path) -> None:
    store, persistence = _open(tmp_path)
    store.create(NAMESPACES, None, namespace("default"))
    kept = store.create(CONFIGMAPS, "default", configmap("kept", data={"k": "v"}))
    store.create(CONFIGMAPS, "default", configmap("gone"))
    store.delete(CONFIGMAPS, "default", "gone")
    updated = store.update(CONFIGMAPS, "default", "kept", {**kept, "data": {"k": "v2"}})
    last_rv = store.resource_version
    persistence.close()

    reopened, persistence = _open(tmp_path)
    assert reopened.resource_version == last_rv
    assert reopened.get(CONFIGMAPS, "default", "kept") == updated
    with pytest.raises(ApiError):
        reopened.get(CONFIGMAPS, "default", "gone")
    created = reopened.create(CONFIGMAPS, "default", configmap("new"))
    assert int(created["metadata"]["resourceVersion"]) == last_rv + 1
    persistence.close()


async def test_after_a_restart_watches_resume_from_now_and_older_ones_relist(tmp_path: Path) -> None:
    store, persistence = _open(tmp_path)
    store.create(NAMESPACES, None, namespace("default"))
    store.create(CONFIGMAPS, "default", configmap("a"))
    persistence.close()

    reopened, persistence = _open(tmp_path)
    with pytest.raises(ApiError) as err:
        reopened.watch(CONFIGMAPS, "default", resource_version="1")
    assert err.value.code == 410
    watch = reopened.watch(CONFIGMAPS, "default", resource_version=str(reopened.resource_version))
    reopened.create(CONFIGMAPS, "default", configmap("b"))
    event = await anext(watch)
    assert (event.type, event.object["metadata"]["name"]) == ("ADDED", "b")
    persistence.close()


def test_relationships_survive_a_restart(tmp_path: Path) -> None:
    store, persistence = _open(tmp_path)
    store.create(NAMESPACES, None, namespace("default"))
    owner = store.create(CONFIGMAPS, "default", configmap("owner"))
    store.create(CONFIGMAPS, "default", configmap("child", ownerReferences=[owner_reference(owner)]))
    store.create(NAMESPACES, None, namespace("team"))
    store.create(PODS, "team", pod("p", node="n1"))
    persistence.close()

    reopened, persistence = _open(tmp_path)
    reopened.delete(CONFIGMAPS, "default", "owner")
    assert reopened.list(CONFIGMAPS, "default").items == []
    reopened.delete(NAMESPACES, None, "team")
    assert reopened.get(NAMESPACES, None, "team")["status"]["phase"] == "Terminating"  # the bound pod holds it
    persistence.close()


def test_the_database_is_durable_sqlite_in_the_data_directory(tmp_path: Path) -> None:
    persistence = Persistence(tmp_path / "data")
    persistence.close()
    db = sqlite3.connect(tmp_path / "data" / FILE_NAME)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    db.close()
