"""The client keeps as many connections open as its callers' threads send on at once: a fleet's thousand nodes
share one client, and every request beyond the library's default pool (ten on two cores) opened a connection of
its own, with a TLS handshake on both sides, and dropped it after the answer."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

from kubelet_dra.peers.kube.client import KubeClient, api_path
from kubelet_dra.workbench.testbed.serverthread import ServerThread

AT_ONCE = 24
HOLD = 0.3


def client_ports(server_port: int) -> set[int]:
    """Local ports of the established TCP connections to ``server_port`` on loopback (this test's process makes
    them; the server's own side has the server's port as its local port)."""
    ports = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, remote, state = line.split()[1:4]
        if state == "01" and int(remote.split(":")[1], 16) == server_port:
            ports.add(int(local.split(":")[1], 16))
    return ports


async def burst(apiserver: ServerThread, client: KubeClient, threads: ThreadPoolExecutor) -> None:
    """``AT_ONCE`` requests in flight together: the server's loop is held for a moment while they are sent."""
    hold = threading.Thread(target=apiserver.call, args=(time.sleep, HOLD))
    hold.start()
    try:
        await asyncio.gather(
            *(client.request("GET", api_path("", "v1", "namespaces"), executor=threads) for _ in range(AT_ONCE))
        )
    finally:
        hold.join()


async def test_requests_in_flight_together_reuse_their_connections_next_time(apiserver: ServerThread) -> None:
    port = urlsplit(apiserver.server.url).port
    assert port is not None
    before = client_ports(port)
    client = KubeClient.from_kubeconfig(str(apiserver.kubeconfig), connections=AT_ONCE)
    with ThreadPoolExecutor(AT_ONCE) as threads:
        try:
            await burst(apiserver, client, threads)
            first = client_ports(port) - before
            await burst(apiserver, client, threads)
            second = client_ports(port) - before
        finally:
            client.close()
    assert len(first) == AT_ONCE, f"{len(first)} connections kept open after {AT_ONCE} requests at once"
    assert second == first, f"{len(second - first)} connections opened anew, {len(first - second)} dropped"
