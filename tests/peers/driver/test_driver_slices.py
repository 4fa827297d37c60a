"""ResourceSlice publishing: names, ownership, pools, availability modes, republishing after deletion."""

from __future__ import annotations

from driver_support import (
    REPUBLISH_DELAY,
    RESOURCE,
    Env,
    claim_ref,
    create_claim,
    create_node,
    list_slices,
    prepare,
    unique,
    wait_slices,
)
from helpers import eventually

from kubelet_dra.peers.driver.configfile import DriverConfig, LabelSelector
from kubelet_dra.peers.kube.client import KubeClient, api_path


async def test_slices_are_named_owned_and_pooled_like_the_helpers(env: Env, kube: KubeClient) -> None:
    node = await kube.request("GET", api_path("", "v1", "nodes", name=env.node))
    async with env.driver_plugin(devices=3):
        (published,) = await wait_slices(kube, env.driver)
    meta, spec = published["metadata"], published["spec"]
    assert meta["generateName"] == f"00000-{env.driver}-{env.node}-"
    assert meta["name"].startswith(meta["generateName"]) and len(meta["name"]) > len(meta["generateName"])
    assert meta["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": env.node, "uid": node["metadata"]["uid"], "controller": True}
    ]
    assert spec["driver"] == env.driver
    assert spec["nodeName"] == env.node
    assert spec["pool"] == {"name": env.node, "generation": 1, "resourceSliceCount": 1}
    assert [d["name"] for d in spec["devices"]] == ["device-0", "device-1", "device-2"]
    device = spec["devices"][1]
    assert device["attributes"]["index"] == {"int": 1}
    assert set(device["attributes"]) >= {"index", "model", "uuid"}
    assert device["capacity"]["memory"]["value"]
    assert not device.get("allowMultipleAllocations")


async def test_device_identities_survive_a_restart(env: Env, kube: KubeClient) -> None:
    async with env.driver_plugin(devices=2):
        (before,) = await wait_slices(kube, env.driver)
    async with env.driver_plugin(devices=2):
        after = await wait_slices(kube, env.driver)
    assert [d["attributes"]["uuid"] for d in after[0]["spec"]["devices"]] == [
        d["attributes"]["uuid"] for d in before["spec"]["devices"]
    ]


async def test_more_than_128_devices_are_split_into_indexed_slices(env: Env, kube: KubeClient) -> None:
    async with env.driver_plugin(devices=130):
        published = await wait_slices(kube, env.driver, 2)
    names = sorted(s["metadata"]["generateName"] for s in published)
    assert names == [f"00000-{env.driver}-{env.node}-", f"00001-{env.driver}-{env.node}-"]
    assert sorted(len(s["spec"]["devices"]) for s in published) == [2, 128]
    assert {s["spec"]["pool"]["resourceSliceCount"] for s in published} == {2}


async def test_deleted_slices_are_republished_after_the_delay(env: Env, kube: KubeClient) -> None:
    async with env.driver_plugin(devices=1) as plugin:
        (published,) = await wait_slices(kube, env.driver)
        await kube.request("DELETE", api_path(RESOURCE, "v1", "resourceslices", name=published["metadata"]["name"]))
        assert await list_slices(kube, env.driver) == []
        (again,) = await wait_slices(kube, env.driver, timeout=REPUBLISH_DELAY * 20)
        assert plugin.publisher.syncs >= 2
    assert again["metadata"]["name"] != published["metadata"]["name"]
    assert again["spec"]["pool"]["name"] == env.node


async def test_two_drivers_on_one_node_publish_their_own_slices(env: Env, kube: KubeClient) -> None:
    other = f"second.{env.driver}"
    async with env.driver_plugin(devices=1), env.driver_plugin(driver=other, devices=2):
        first = await wait_slices(kube, env.driver)
        second = await wait_slices(kube, other)
    assert [len(s["spec"]["devices"]) for s in first] == [1]
    assert [len(s["spec"]["devices"]) for s in second] == [2]
    assert second[0]["metadata"]["generateName"] == f"00000-{other}-{env.node}-"


async def test_network_attached_and_shared_devices(env: Env, kube: KubeClient) -> None:
    async with env.driver_plugin(devices=1, config=DriverConfig(availability="all-nodes", sharing="shared")):
        (published,) = await wait_slices(kube, env.driver)
    assert published["spec"]["allNodes"] is True
    assert "nodeName" not in published["spec"]
    assert published["spec"]["devices"][0]["allowMultipleAllocations"] is True


async def test_node_selector_availability_publishes_the_selector(env: Env, kube: KubeClient) -> None:
    selector = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["a"]}]}]}
    config = DriverConfig(availability="node-selector", slice_node_selector=selector)
    async with env.driver_plugin(devices=1, config=config):
        (published,) = await wait_slices(kube, env.driver)
    assert published["spec"]["nodeSelector"] == selector


async def test_devices_exist_only_on_nodes_matching_the_label_selector(env: Env, kube: KubeClient) -> None:
    labelled = unique("node")
    await create_node(kube, labelled, {"example.com/gpu": "true"})
    config = DriverConfig(node_selector=LabelSelector({"example.com/gpu": "true"}))
    claim = await create_claim(kube, driver=env.driver, pool=env.node)
    async with env.driver_plugin(config=config) as plugin:
        await eventually(lambda: plugin.publisher.syncs)
        assert await list_slices(kube, env.driver) == []
        response = await prepare(plugin.settings.service_socket, [claim_ref(claim)])
        assert "not allocatable" in response.claims[claim["metadata"]["uid"]].error
    async with env.driver_plugin(config=config, node=labelled):
        published = await wait_slices(kube, env.driver)
    assert [s["spec"]["nodeName"] for s in published] == [labelled]


async def test_the_driver_name_comes_from_the_config_unless_the_flag_is_given(env: Env, kube: KubeClient) -> None:
    named = f"config.{env.driver}"
    async with env.driver_plugin(driver=None, config=DriverConfig(driver_name=named), devices=1) as plugin:
        assert plugin.settings.driver_name == named
        assert (await wait_slices(kube, named))[0]["spec"]["driver"] == named
    settings = env.settings(driver=env.driver, config=DriverConfig(driver_name=named))
    assert settings.driver_name == env.driver
