"""Fixtures for the reference-driver tests: one API server per session, a fresh node per test."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from driver_support import APIServerThread, Env, create_node, unique

from kubelet_dra.kube.client import KubeClient


@pytest.fixture(scope="session")
def apiserver() -> Iterator[APIServerThread]:
    directory = Path(tempfile.mkdtemp(prefix="kd-api-", dir="/tmp"))
    server = APIServerThread(directory).start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
async def kube(apiserver: APIServerThread) -> AsyncIterator[KubeClient]:
    client = KubeClient.from_kubeconfig(str(apiserver.kubeconfig))
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
async def env(apiserver: APIServerThread, kube: KubeClient) -> AsyncIterator[Env]:
    """A short directory (Unix socket paths are limited to 107 bytes) and a Node object of its own."""
    root = Path(tempfile.mkdtemp(prefix="kd-", dir="/tmp"))
    node = unique("node")
    await create_node(kube, node)
    try:
        yield Env(root, apiserver, node)
    finally:
        shutil.rmtree(root, ignore_errors=True)
