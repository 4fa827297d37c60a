"""Fixtures for the reference-driver tests: one API server per session, a fresh node per test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from driver_support import Env, create_node, unique

from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.workbench.testbed.serverthread import ServerThread


@pytest.fixture
async def kube(apiserver: ServerThread) -> AsyncIterator[KubeClient]:
    client = KubeClient.from_kubeconfig(str(apiserver.kubeconfig))
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
async def env(apiserver: ServerThread, kube: KubeClient, short_dir: Path) -> Env:
    """A short directory (Unix socket paths are limited to 107 bytes) and a Node object of its own."""
    node = unique("node")
    await create_node(kube, node)
    return Env(short_dir, apiserver, node)
