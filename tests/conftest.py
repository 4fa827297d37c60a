"""Fixtures shared by every test folder."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from nodeenv import NodeEnv

from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.workbench.testbed.forked import ENABLE as FORK_DRIVERS
from kubelet_dra.workbench.testbed.serverthread import ServerThread

os.environ[FORK_DRIVERS] = "1"
"""The suite starts the reference driver about 500 times: by fork from a server that imported it once
(tests/workbench/testbed/test_forked.py holds that path to an exec'd one's behaviour)."""


@pytest.fixture(scope="session")
def apiserver() -> Iterator[ServerThread]:
    """One embedded API server for a whole test session, in its own thread (a short /tmp dir for its files)."""
    directory = Path(tempfile.mkdtemp(prefix="kd-api-", dir="/tmp"))
    server = ServerThread(directory).start()
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """Unix socket paths are limited to 107 bytes: a test's sockets live in a short /tmp directory, not tmp_path."""
    with tempfile.TemporaryDirectory(prefix="kd-", dir="/tmp", ignore_cleanup_errors=True) as directory:
        yield Path(directory)


@pytest.fixture
async def env(apiserver: ServerThread, short_dir: Path) -> AsyncIterator[NodeEnv]:
    """One test's node: a short root dir (Unix socket paths are limited to 107 bytes) and a node name of its own."""
    kube = KubeClient.from_kubeconfig(str(apiserver.kubeconfig))
    environment = NodeEnv(short_dir, kube, apiserver.kubeconfig)
    try:
        yield environment
    finally:
        await environment.close()
        kube.close()
