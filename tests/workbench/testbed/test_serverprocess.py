"""The embedded API server in a process of its own (what ``run --nodes`` starts): it serves through the
kubeconfig it wrote, stops with the block, and a server that cannot start is one error naming its command."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from kubelet_dra.peers.errors import KubeletDRAError
from kubelet_dra.peers.kube.client import KubeClient, api_path
from kubelet_dra.workbench.testbed.serverprocess import ServerProcess


async def test_the_server_process_serves_until_its_block_ends(short_dir: Path) -> None:
    async with ServerProcess(short_dir / "admin.kubeconfig") as server:
        assert server.pid is not None and server.pid != os.getpid()
        kube = KubeClient.from_kubeconfig(str(server.kubeconfig))
        try:
            node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
            await kube.request("POST", api_path("", "v1", "nodes"), body=node)
            assert (await kube.request("GET", api_path("", "v1", "nodes", name="n1")))["metadata"]["name"] == "n1"
        finally:
            kube.close()
    with pytest.raises(ProcessLookupError):
        os.kill(server.pid, 0)


async def test_a_server_that_cannot_listen_is_one_error(short_dir: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(KubeletDRAError) as raised:
            async with ServerProcess(short_dir / "admin.kubeconfig", listen=f"127.0.0.1:{port}"):
                pass
    assert "the API server process did not start (exit code" in str(raised.value)
    assert f"--listen 127.0.0.1:{port}" in str(raised.value)
