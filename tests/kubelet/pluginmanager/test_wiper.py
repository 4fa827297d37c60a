"""ResourceSlice wiping against the embedded API server: selectors, the backoff, refusals, recovery."""

from __future__ import annotations

import random
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubelet_dra.kubelet.cm.dra.plugin.resourceslices import ResourceSliceWiper, field_selector
from kubelet_dra.kubelet.wait import Backoff
from kubelet_dra.peers.apiserver.server import EmbeddedAPIServer
from kubelet_dra.peers.kube.client import KubeClient, api_path

NOMINAL_WAITS = [1, 2, 4, 8, 16, 32, 64, 128, 256]
SLICES = api_path("resource.k8s.io", "v1", "resourceslices")


def resource_slice(name: str, driver: str, node: str | None) -> dict[str, Any]:
    placement = {"nodeName": node} if node else {"allNodes": True}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": driver,
            **placement,
            "pool": {"name": node or "all", "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "dev-0"}],
        },
    }


async def slice_names(kube: KubeClient) -> set[str]:
    return {item["metadata"]["name"] for item in (await kube.request("GET", SLICES))["items"]}


async def create_slices(kube: KubeClient, *specs: tuple[str, str, str | None]) -> None:
    for name, driver, node in specs:
        await kube.request("POST", SLICES, body=resource_slice(name, driver, node))


async def create_node(kube: KubeClient, name: str) -> None:
    body = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
    await kube.request("POST", api_path("", "v1", "nodes"), body=body)


class InstantSleep:
    """Records each wait and returns at once; ``then`` runs when the n-th wait happens."""

    def __init__(self, then: dict[int, Any] | None = None) -> None:
        self.waits: list[float] = []
        self._then = then or {}

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        action = self._then.get(len(self.waits))
        if action is not None:
            await action()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
async def apiserver(tmp: Path) -> AsyncIterator[EmbeddedAPIServer]:
    async with EmbeddedAPIServer(data_dir=tmp / "apiserver") as server:
        yield server


@pytest.fixture
def admin(apiserver: EmbeddedAPIServer, tmp: Path) -> KubeClient:
    kube = KubeClient.from_kubeconfig(str(apiserver.kubeconfig(tmp / "admin.kubeconfig")))
    yield kube
    kube.close()


def test_backoff_is_apimachinery_step_for_step():
    backoff = Backoff(rng=random.Random(7))
    waits = [backoff.step() for _ in range(9)]
    assert backoff.steps == 0, "exceeding the 300 s cap drops the remaining steps to zero"
    for wait, nominal in zip(waits, NOMINAL_WAITS, strict=True):
        assert nominal <= wait < nominal * 1.2
    assert Backoff(jitter=0).step() == 1.0


def test_field_selectors_match_go():
    assert field_selector("node-1") == "spec.nodeName=node-1"
    assert field_selector("node-1", "gpu.example.com") == "spec.driver=gpu.example.com,spec.nodeName=node-1"


async def test_wipe_deletes_only_the_selected_slices(admin: KubeClient):
    await create_node(admin, "node-1")
    await create_slices(
        admin,
        ("gpu-n1", "gpu.example.com", "node-1"),
        ("nic-n1", "nic.example.com", "node-1"),
        ("gpu-n2", "gpu.example.com", "node-2"),
        ("gpu-all", "gpu.example.com", None),
    )
    wiper = ResourceSliceWiper(admin, "node-1", sleep=InstantSleep())

    outcome = await wiper.wipe("gpu.example.com")
    assert (outcome.done, outcome.attempts, outcome.deleted) == (True, 1, 1)
    assert outcome.field_selector == "spec.driver=gpu.example.com,spec.nodeName=node-1"
    assert await slice_names(admin) == {"nic-n1", "gpu-n2", "gpu-all"}

    outcome = await wiper.wipe()
    assert (outcome.done, outcome.deleted, outcome.field_selector) == (True, 1, "spec.nodeName=node-1")
    assert await slice_names(admin) == {"gpu-n2", "gpu-all"}


async def test_dry_run_wipe_counts_the_selected_slices_and_deletes_none(admin: KubeClient):
    await create_node(admin, "node-1")
    await create_slices(admin, ("gpu-n1", "gpu.example.com", "node-1"), ("nic-n1", "nic.example.com", "node-1"))
    wiper = ResourceSliceWiper(admin, "node-1", sleep=InstantSleep(), dry_run=True)

    outcome = await wiper.wipe()
    assert (outcome.done, outcome.deleted, outcome.dry_run) == (True, 2, True)
    outcome = await wiper.wipe("gpu.example.com")
    assert (outcome.deleted, outcome.field_selector) == (1, "spec.driver=gpu.example.com,spec.nodeName=node-1")
    assert await slice_names(admin) == {"gpu-n1", "nic-n1"}


async def test_refused_wipe_gives_up_after_nine_attempts(apiserver: EmbeddedAPIServer, admin: KubeClient, tmp: Path):
    await create_node(admin, "node-1")
    await create_slices(admin, ("gpu-n1", "gpu.example.com", "node-1"))
    config = yaml.safe_load(apiserver.kubeconfig(tmp / "bad.kubeconfig").read_text())
    config["users"][0]["user"]["token"] = "not-a-valid-token"
    (tmp / "bad.kubeconfig").write_text(yaml.safe_dump(config))
    unauthorized = KubeClient.from_kubeconfig(str(tmp / "bad.kubeconfig"))
    sleep = InstantSleep()
    try:
        outcome = await ResourceSliceWiper(unauthorized, "node-1", sleep=sleep, rng=random.Random(1)).wipe()
    finally:
        unauthorized.close()
    assert (outcome.done, outcome.attempts) == (False, 9)
    assert len(sleep.waits) == 9, "a last ≈256 s wait, then giving up without a tenth attempt"
    for wait, nominal in zip(sleep.waits, NOMINAL_WAITS, strict=True):
        assert nominal <= wait < nominal * 1.2
    assert await slice_names(admin) == {"gpu-n1"}


async def test_wipe_retries_while_the_api_server_is_down_then_succeeds(tmp: Path):
    port = free_port()
    data = tmp / "apiserver"
    async with EmbeddedAPIServer(listen=f"127.0.0.1:{port}", data_dir=data) as server:
        kubeconfig = server.kubeconfig(tmp / "admin.kubeconfig")
        admin = KubeClient.from_kubeconfig(str(kubeconfig))
        await create_node(admin, "node-1")
        await create_slices(admin, ("gpu-n1", "gpu.example.com", "node-1"))
    restarted: list[EmbeddedAPIServer] = []

    async def start_again() -> None:
        restarted.append(await EmbeddedAPIServer(listen=f"127.0.0.1:{port}", data_dir=data).__aenter__())

    sleep = InstantSleep(then={3: start_again})
    try:
        outcome = await ResourceSliceWiper(admin, "node-1", sleep=sleep).wipe()
        assert (outcome.done, outcome.attempts, outcome.deleted) == (True, 4, 1)
        assert await slice_names(admin) == set()
    finally:
        admin.close()
        for server in restarted:
            await server.__aexit__(None, None, None)


async def test_missing_node_is_retried_until_it_exists(admin: KubeClient):
    await create_slices(admin, ("gpu-n1", "gpu.example.com", "node-1"))

    async def register_node() -> None:
        await create_node(admin, "node-1")

    sleep = InstantSleep(then={2: register_node})
    outcome = await ResourceSliceWiper(admin, "node-1", sleep=sleep).wipe()
    assert (outcome.done, outcome.attempts) == (True, 3)
    assert await slice_names(admin) == set()
