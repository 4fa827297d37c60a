"""Fixtures that run the embedded API server for real, synchronous clients.

The server runs in a background thread with its own event loop (``ServerThread``): the official
Python client and kubectl are synchronous, so tests stay plain functions that use them as a user
would, while the server keeps serving (and streaming watches) in parallel. Each test gets fresh
servers on ephemeral 127.0.0.1 ports; they start in milliseconds.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubelet_dra.workbench.testbed.serverthread import ServerThread

FIXTURES = Path(__file__).parents[2] / "fixtures" / "kube-apiserver-1.36"


@pytest.fixture
def recorded() -> Callable[[str], Any]:
    """Loads a recording of kube-apiserver 1.36 by file name."""

    def load(name: str) -> Any:
        return json.loads((FIXTURES / name).read_text())

    return load


@pytest.fixture
def start_apiserver(tmp_path: Path) -> Iterator[Callable[..., ServerThread]]:
    """Start servers with any ``EmbeddedAPIServer`` options; all are stopped after the test."""
    started: list[ServerThread] = []

    def start(**options: Any) -> ServerThread:
        workdir = tmp_path / f"server{len(started)}"
        workdir.mkdir()
        server = ServerThread(workdir, **options)
        started.append(server)
        return server.start()

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def apiserver(start_apiserver: Callable[..., ServerThread]) -> ServerThread:
    return start_apiserver(bookmark_interval=0.2)


@pytest.fixture
def api_client(apiserver: ServerThread) -> Iterator[client.ApiClient]:
    with apiserver.api_client() as api:
        yield api


@pytest.fixture
def core(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture
def resource_v1(api_client: client.ApiClient) -> client.ResourceV1Api:
    return client.ResourceV1Api(api_client)


@pytest.fixture
def kubectl_env(apiserver: ServerThread, tmp_path: Path) -> dict[str, str]:
    """Environment for running kubectl against ``apiserver`` with a private discovery cache."""
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not on PATH")
    return {
        **os.environ,
        "KUBECONFIG": str(apiserver.kubeconfig),
        "KUBECACHEDIR": str(tmp_path / "kube-cache"),
        "HOME": str(tmp_path),
    }
