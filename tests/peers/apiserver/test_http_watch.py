"""Watches over HTTPS: resuming from a resourceVersion, live events, bookmarks, 410, timeouts."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import urllib3
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from kubelet_dra.workbench.testbed.serverthread import ServerThread
from kubelet_dra.workbench.testbed.serverthread import resource_slice_manifest as slice_manifest

SLICES = "/apis/resource.k8s.io/v1/resourceslices"
TABLE_ACCEPT = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def events(response: urllib3.BaseHTTPResponse) -> Iterator[dict[str, Any]]:
    """The decoded events of a watch response, one per line, as they arrive."""
    buffer = b""
    for chunk in response.read_chunked():
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            yield json.loads(line)


def open_watch(server: ServerThread, path: str, **kwargs: Any) -> tuple[urllib3.BaseHTTPResponse, Iterator[dict]]:
    response = server.request("GET", path, preload=False, **kwargs)
    assert response.status == 200, response.data
    assert response.headers["Content-Type"].startswith("application/json")
    return response, events(response)


def create_slice(server: ServerThread, name: str, **kwargs: Any) -> dict[str, Any]:
    code, body = server.json("POST", SLICES, body=slice_manifest(name, **kwargs))
    assert code == 201, body
    return body


def test_watch_from_a_resource_version_replays_later_changes(
    apiserver: ServerThread, resource_v1: client.ResourceV1Api
) -> None:
    resource_v1.create_resource_slice(slice_manifest("before"))
    since = resource_v1.list_resource_slice().metadata.resource_version
    resource_v1.create_resource_slice(slice_manifest("after"))
    resource_v1.patch_resource_slice("after", {"spec": {"pool": {"generation": 2}}})
    resource_v1.delete_resource_slice("before")
    seen = [
        (event["type"], event["object"].metadata.name)
        for event in watch.Watch().stream(resource_v1.list_resource_slice, resource_version=since, timeout_seconds=1)
    ]
    assert seen == [("ADDED", "after"), ("MODIFIED", "after"), ("DELETED", "before")]


def test_live_events_arrive_at_the_url_version(apiserver: ServerThread) -> None:
    response, stream = open_watch(apiserver, "/apis/resource.k8s.io/v1beta1/resourceslices?watch=1")
    create_slice(apiserver, "live")
    event = next(stream)
    assert event["type"] == "ADDED"
    assert event["object"]["apiVersion"] == "resource.k8s.io/v1beta1"
    assert "basic" in event["object"]["spec"]["devices"][0]
    response.release_conn()


def test_legacy_watch_prefix_watches_one_object(apiserver: ServerThread) -> None:
    create_slice(apiserver, "other")
    create_slice(apiserver, "mine")
    _, stream = open_watch(apiserver, "/apis/resource.k8s.io/v1/watch/resourceslices/mine?resourceVersion=0")
    first = next(stream)
    assert (first["type"], first["object"]["metadata"]["name"]) == ("ADDED", "mine")


def test_bookmarks_carry_the_current_resource_version(apiserver: ServerThread) -> None:
    created = create_slice(apiserver, "marked")
    version = created["metadata"]["resourceVersion"]
    _, stream = open_watch(
        apiserver,
        f"/apis/resource.k8s.io/v1beta2/resourceslices?watch=true&allowWatchBookmarks=true&resourceVersion={version}",
    )
    bookmark = next(stream)
    assert bookmark["type"] == "BOOKMARK"
    assert bookmark["object"]["kind"] == "ResourceSlice"
    assert bookmark["object"]["apiVersion"] == "resource.k8s.io/v1beta2"
    assert bookmark["object"]["metadata"]["resourceVersion"] == version


def test_initial_events_end_with_a_marked_bookmark(apiserver: ServerThread) -> None:
    create_slice(apiserver, "one")
    create_slice(apiserver, "two")
    _, stream = open_watch(
        apiserver,
        f"{SLICES}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
    )
    first, second, third = next(stream), next(stream), next(stream)
    assert sorted((first["type"], first["object"]["metadata"]["name"]) for first in (first, second)) == [
        ("ADDED", "one"),
        ("ADDED", "two"),
    ]
    assert third["type"] == "BOOKMARK"
    assert third["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_send_initial_events_requires_not_older_than(apiserver: ServerThread) -> None:
    code, body = apiserver.json("GET", f"{SLICES}?watch=1&sendInitialEvents=true&allowWatchBookmarks=true")
    assert code == 422
    assert body["details"]["causes"][0]["field"] == "resourceVersionMatch"


def test_too_old_resource_version_is_an_error_event_like_kube(
    start_apiserver: Callable[..., ServerThread], recorded: Callable[[str], Any]
) -> None:
    server = start_apiserver(history_size=3)
    for index in range(6):
        create_slice(server, f"s{index}")
    response = server.request("GET", f"{SLICES}?watch=1&resourceVersion=1")
    assert response.status == 200
    (line,) = response.data.decode().splitlines()
    event = json.loads(line)
    expected = recorded("watch-too-old.json")
    assert event.keys() == expected.keys() and event["type"] == "ERROR"
    assert event["object"].keys() == expected["object"].keys()
    assert {key: event["object"][key] for key in ("kind", "status", "reason", "code")} == {
        key: expected["object"][key] for key in ("kind", "status", "reason", "code")
    }
    assert event["object"]["message"].startswith("too old resource version: 1 (")
    with server.api_client() as api, pytest.raises(ApiException) as gone:
        list(watch.Watch().stream(client.ResourceV1Api(api).list_resource_slice, resource_version="1"))
    assert gone.value.status == 410


def test_timeout_seconds_ends_the_stream(apiserver: ServerThread) -> None:
    response = apiserver.request("GET", f"{SLICES}?watch=1&timeoutSeconds=1")
    assert response.status == 200 and response.data == b""


def test_table_watch_for_kubectl(apiserver: ServerThread) -> None:
    _, stream = open_watch(apiserver, f"{SLICES}?watch=1", headers={"Accept": TABLE_ACCEPT})
    create_slice(apiserver, "tabled", node="node-t")
    event = next(stream)
    assert event["object"]["kind"] == "Table"
    names = [column["name"] for column in event["object"]["columnDefinitions"]]
    assert names == ["Name", "Node", "Driver", "Pool", "Age"]
    assert event["object"]["rows"][0]["cells"][:4] == ["tabled", "node-t", "gpu.example.com", "node-t"]


def test_stopping_the_server_ends_open_watches(start_apiserver: Callable[..., ServerThread]) -> None:
    server = start_apiserver()
    response, stream = open_watch(server, f"{SLICES}?watch=1")
    server.stop()
    assert list(stream) == []
    response.release_conn()


def test_watchers_that_hang_up_are_released(apiserver: ServerThread) -> None:
    response, _ = open_watch(apiserver, f"{SLICES}?watch=1")
    assert apiserver.call(lambda: apiserver.server.open_watches) == 1
    assert response.connection is not None
    response.connection.close()
    deadline = time.monotonic() + 10
    while apiserver.call(lambda: apiserver.server.open_watches) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert apiserver.call(lambda: apiserver.server.open_watches) == 0
