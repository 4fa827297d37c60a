"""Persistence: a store reopened on the same data directory keeps its objects and its resourceVersion counter."""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from test_store_support import CONFIGMAPS, NAMESPACES, PODS, Clock, configmap, namespace, owner_reference, pod

from kubelet_dra.peers.apiserver.persistence import FILE_NAME, Persistence
from kubelet_dra.peers.apiserver.status import ApiError
from kubelet_dra.peers.apiserver.store import Store


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


def test_a_data_dir_holding_an_object_that_does_not_decode_is_refused_at_start_naming_it(tmp_path: Path) -> None:
    """What a server before typed decoding stored (a device named 5) would break every Go reader: the
    server names it and does not start."""
    persistence = Persistence(tmp_path)
    bad = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "broken", "uid": "u", "resourceVersion": "1"},
        "spec": {"driver": "d.example.com", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}},
    }
    bad["spec"]["devices"] = [{"name": 5}]
    persistence.write("resource.k8s.io/resourceslices", "broken", bad, 1)
    persistence.write("/configmaps", "default/fine", configmap("fine", namespace="default"), 2)
    persistence.close()
    result = _serve(tmp_path)
    assert result.returncode == 2, result.stderr
    first, *named = result.stderr.splitlines()
    assert first.startswith(f"kubelet-dra: error: {tmp_path / FILE_NAME}: 1 stored object(s) do not decode")
    assert "(fix: delete each with sqlite3" in first
    assert named == [
        "  resource.k8s.io/resourceslices broken: json: cannot unmarshal number into Go struct field"
        " Device.spec.devices.name of type string"
    ]
    assert "Traceback" not in result.stderr


def test_the_database_and_its_journals_are_the_owner_s_alone_in_a_dir_of_its_own(tmp_path: Path) -> None:
    store, persistence = _open(tmp_path / "data")
    store.create(NAMESPACES, None, namespace("default"))
    files = [tmp_path / "data" / name for name in (FILE_NAME, f"{FILE_NAME}-wal", f"{FILE_NAME}-shm")]
    assert [path.stat().st_mode & 0o777 for path in files] == [0o600] * 3
    assert (tmp_path / "data").stat().st_mode & 0o777 == 0o700
    persistence.close()
    files[0].chmod(0o644)  # as a server before this rule left it
    Persistence(tmp_path / "data").close()
    assert files[0].stat().st_mode & 0o777 == 0o600


def test_a_link_at_the_database_s_name_is_refused_in_one_line_and_not_followed(tmp_path: Path) -> None:
    theirs = tmp_path / "theirs"
    theirs.write_bytes(b"not yours to open")
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    (data_dir / FILE_NAME).symlink_to(theirs)
    result = subprocess.run(
        [sys.executable, "-m", "kubelet_dra", "apiserver", "--data-dir", str(data_dir), "--listen", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (result.returncode, result.stderr.splitlines()[-1]) == (
        2,
        f"kubelet-dra: error: {data_dir / FILE_NAME}: cannot open the database: it is a symbolic link, which is "
        "not followed (fix: give --data-dir a directory of your own)",
    ), result.stderr
    assert "Traceback" not in result.stderr
    assert theirs.read_bytes() == b"not yours to open"


def _serve(data_dir: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "kubelet_dra", "apiserver", "--data-dir", str(data_dir), "--listen", "127.0.0.1:0"]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        ("UPDATE objects SET body = '{x'", "1 stored object(s) are not objects the server can read"),
        ("UPDATE objects SET body = '[1]'", "1 stored object(s) are not objects the server can read"),
        ("UPDATE objects SET body = '" + "[" * 100_000 + "'", "1 stored object(s) are not objects"),
        ("UPDATE counters SET value = 'abc'", "not an API server database: the resourceVersion counter is 'abc'"),
        ("DROP TABLE objects; CREATE TABLE objects (x)", "not an API server database: no such column: resource"),
        ("garbage", "not an API server database: file is not a database"),
    ],
)
def test_a_damaged_database_stops_the_server_with_one_line_naming_it(tmp_path: Path, damage: str, message: str):
    persistence = Persistence(tmp_path)
    persistence.write("/configmaps", "default/fine", configmap("fine", namespace="default"), 2)
    persistence.close()
    if damage == "garbage":
        (tmp_path / FILE_NAME).write_bytes(b"not a database " * 100)
    else:
        db = sqlite3.connect(tmp_path / FILE_NAME)
        db.executescript(damage)
        db.close()
    result = _serve(tmp_path)
    assert result.returncode == 2, result.stderr[-800:]
    assert result.stderr.startswith(f"kubelet-dra: error: {tmp_path / FILE_NAME}: {message}"), result.stderr[-800:]
    assert "(fix: " in result.stderr.splitlines()[0] and "Traceback" not in result.stderr
