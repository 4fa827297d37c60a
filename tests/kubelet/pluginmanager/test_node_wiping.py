"""Wiping as the node does it: all node slices at start, a driver's slices once it stayed unusable too long."""

from __future__ import annotations

import pytest

from kubelet_dra.kubelet.kubelet import Node
from kubelet_dra.peers.kube.client import KubeClient, api_path

from .support import FakeClock
from .test_wiper import create_node, create_slices, slice_names

GPU = "gpu.example.com"


@pytest.fixture
def admin(kubeconfig: str) -> KubeClient:
    kube = KubeClient.from_kubeconfig(kubeconfig)
    yield kube
    kube.close()


async def test_start_registers_the_node_and_wipes_only_its_slices(node_factory, admin: KubeClient, kubeconfig):
    await create_node(admin, "node-2")
    await create_slices(
        admin,
        ("gpu-n1", GPU, "node-1"),
        ("nic-n1", "nic.example.com", "node-1"),
        ("gpu-n2", GPU, "node-2"),
        ("gpu-all", GPU, None),
    )
    async with node_factory(kubeconfig=kubeconfig) as node:
        outcome = await node.startup_wipe
        assert (outcome.done, outcome.deleted, outcome.field_selector) == (True, 2, "spec.nodeName=node-1")
        assert await slice_names(admin) == {"gpu-n2", "gpu-all"}
        assert (await admin.request("GET", api_path("", "v1", "nodes", name="node-1")))["metadata"]["name"] == "node-1"


async def started_with_slices(node: Node, admin: KubeClient, driver) -> None:
    await node.startup_wipe
    await create_slices(admin, ("gpu-n1", GPU, "node-1"), ("nic-n1", "nic.example.com", "node-1"))
    await driver.start()
    await driver.wait_for_status()
    await node.wait_for(lambda: any(i.connected for i in node.instances(GPU)) and node.pending_wipes() == {})


async def test_slices_are_wiped_after_the_delay_when_the_driver_stops(
    node_factory, make_driver, admin: KubeClient, kubeconfig, clock: FakeClock
):
    driver = make_driver(GPU)
    async with node_factory(kubeconfig=kubeconfig) as node:
        await started_with_slices(node, admin, driver)

        await driver.stop()
        await node.wait_for(lambda: GPU in node.pending_wipes())
        assert node.pending_wipes()[GPU] == clock.time() + 30
        await clock.advance(29)
        assert await slice_names(admin) == {"gpu-n1", "nic-n1"}
        await clock.advance(1)
        await node.wait_for(lambda: len(node.wiper.outcomes) == 2)
        assert node.wiper.outcomes[-1].field_selector == "spec.driver=gpu.example.com,spec.nodeName=node-1"
        assert await slice_names(admin) == {"nic-n1"}


async def test_no_wipe_when_the_driver_comes_back_in_time(
    node_factory, make_driver, admin: KubeClient, kubeconfig, clock: FakeClock
):
    driver = make_driver(GPU)
    async with node_factory(kubeconfig=kubeconfig, wiping_delay=10) as node:
        await started_with_slices(node, admin, driver)

        await driver.stop()
        await node.wait_for(lambda: GPU in node.pending_wipes())
        await clock.advance(9)
        await driver.start()
        await driver.wait_for_status(2)
        await node.wait_for(lambda: node.pending_wipes() == {} and any(i.connected for i in node.instances(GPU)))
        await clock.advance(60)
        assert len(node.wiper.outcomes) == 1, "only the startup wipe"
        assert await slice_names(admin) == {"gpu-n1", "nic-n1"}


async def test_registered_driver_whose_endpoint_never_answers_loses_its_slices(
    node_factory, make_driver, admin: KubeClient, kubeconfig, clock: FakeClock
):
    driver = make_driver(GPU)
    async with node_factory(kubeconfig=kubeconfig) as node:
        await node.startup_wipe
        await create_slices(admin, ("gpu-n1", GPU, "node-1"))
        await driver.start_registration()  # registered, but nothing serves the endpoint
        await node.wait_for(lambda: GPU in node.pending_wipes())
        await clock.advance(30)
        await node.wait_for(lambda: len(node.wiper.outcomes) == 2)
        assert await slice_names(admin) == set()
        assert len(node.instances(GPU)) == 1, "still registered: only the connection is missing"
