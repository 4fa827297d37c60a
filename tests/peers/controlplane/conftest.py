"""Fixtures for the control-plane tests: a fresh embedded API server and client per test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubelet_dra.peers.apiserver.server import EmbeddedAPIServer
from kubelet_dra.peers.kube.client import KubeClient


@pytest.fixture
async def server() -> AsyncIterator[EmbeddedAPIServer]:
    async with EmbeddedAPIServer(listen="127.0.0.1:0", tls=False) as running:
        yield running


@pytest.fixture
async def kube(server: EmbeddedAPIServer, tmp_path: Path) -> AsyncIterator[KubeClient]:
    client = KubeClient.from_kubeconfig(str(server.kubeconfig(tmp_path / "admin.kubeconfig")))
    try:
        yield client
    finally:
        client.close()
