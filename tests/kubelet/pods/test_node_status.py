"""The Node object the simulated kubelet registers and keeps alive, on the embedded API server."""

from __future__ import annotations

import asyncio
from typing import Any

from helpers import KubeletDRAProcess
from nodeenv import NodeEnv

from kubelet_dra.kubelet.nodestatus import NodeShape
from kubelet_dra.kubelet.release import V1_36, V1_37
from kubelet_dra.peers.kube.client import api_path


async def get_node(env: NodeEnv) -> dict[str, Any]:
    return await env.kube.request("GET", api_path("", "v1", "nodes", name=env.node_name))


def conditions(node: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["lastHeartbeatTime"]) for c in node["status"]["conditions"]}


async def test_the_node_registers_with_what_a_scheduler_needs(env: NodeEnv) -> None:
    async with env.node():
        node = await get_node(env)
    status = node["status"]
    assert status["capacity"] == status["allocatable"] == {"cpu": "8", "memory": "32Gi", "pods": "110"}
    assert {kind: value for kind, (value, _) in conditions(node).items()} == {
        "Ready": "True",
        "MemoryPressure": "False",
        "DiskPressure": "False",
        "PIDPressure": "False",
    }
    assert status["nodeInfo"]["kubeletVersion"] == "v1.37.0", "the current release unless asked otherwise"
    assert {"type": "Hostname", "address": env.node_name} in status["addresses"]
    assert node["metadata"]["labels"]["kubernetes.io/hostname"] == env.node_name
    assert "taints" not in node.get("spec", {})


async def test_the_node_reports_the_kubelet_release_it_emulates(env: NodeEnv) -> None:
    async with env.node(release=V1_36):
        assert (await get_node(env))["status"]["nodeInfo"]["kubeletVersion"] == "v1.36.2"
    async with env.node(release=V1_37):
        assert (await get_node(env))["status"]["nodeInfo"]["kubeletVersion"] == "v1.37.0", "adopted and updated"


async def test_resources_labels_and_taints_are_the_ones_asked_for(env: NodeEnv) -> None:
    taint = {"key": "gpu", "value": "true", "effect": "NoSchedule"}
    shape = NodeShape(cpu="64", memory="512Gi", pods="250", labels={"zone": "lab"}, taints=(taint,))
    async with env.node(node_shape=shape):
        node = await get_node(env)
    assert node["status"]["allocatable"] == {"cpu": "64", "memory": "512Gi", "pods": "250"}
    assert node["metadata"]["labels"]["zone"] == "lab"
    assert node["spec"]["taints"] == [taint]


async def test_heartbeats_renew_the_lease_and_post_the_status_only_when_it_changes(env: NodeEnv) -> None:
    lease_path = api_path("coordination.k8s.io", "v1", "leases", namespace="kube-node-lease", name=env.node_name)
    async with env.node(heartbeat_period=0.3) as node:
        assert node.heartbeat is not None
        await node.wait_for(lambda: node.heartbeat.beats >= 2, timeout=10)
        first_node, first_lease = await get_node(env), await env.kube.request("GET", lease_path)
        beats = node.heartbeat.beats
        await node.wait_for(lambda: node.heartbeat.beats >= beats + 4, timeout=10)
        await asyncio.sleep(0)
        later_node, later_lease = await get_node(env), await env.kube.request("GET", lease_path)
    assert later_lease["spec"]["renewTime"] > first_lease["spec"]["renewTime"], "each beat renews the Lease"
    assert later_lease["spec"]["holderIdentity"] == env.node_name and later_lease["spec"]["leaseDurationSeconds"] == 40
    # as a kubelet (nodeStatusReportFrequency 5 min): an unchanged status is not written again on every beat
    assert later_node["metadata"]["resourceVersion"] == first_node["metadata"]["resourceVersion"]
    assert conditions(later_node)["Ready"][0] == "True"


async def test_an_existing_node_is_adopted_and_given_a_status(env: NodeEnv) -> None:
    bare = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": env.node_name, "labels": {"made": "before"}}}
    await env.kube.request("POST", api_path("", "v1", "nodes"), body=bare)
    async with env.node():
        node = await get_node(env)
    assert node["metadata"]["labels"] == {"made": "before"}, "a node made beforehand keeps its labels"
    assert conditions(node)["Ready"][0] == "True"
    assert node["status"]["allocatable"]["pods"] == "110"


async def test_run_reports_the_node_the_flags_describe(env: NodeEnv) -> None:
    run = await KubeletDRAProcess.start(
        *(
            "run",
            "--node-name",
            env.node_name,
            "--registry-dir",
            str(env.registry),
            "--kubeconfig",
            str(env.kubeconfig),
        ),
        *("--node-cpu", "4", "--node-memory", "16Gi", "--node-pods", "30"),
        *("--node-label", "zone=lab", "--node-taint", "gpu=true:NoSchedule", "--node-taint", "dedicated:NoExecute"),
    )
    try:
        await run.wait_line("Registered Node object")
        node = await get_node(env)
    finally:
        assert await run.stop() == 0
    assert node["status"]["allocatable"] == {"cpu": "4", "memory": "16Gi", "pods": "30"}
    assert node["metadata"]["labels"]["zone"] == "lab"
    assert node["spec"]["taints"] == [
        {"key": "gpu", "value": "true", "effect": "NoSchedule"},
        {"key": "dedicated", "effect": "NoExecute"},
    ]
