"""Optional node operations (DRAOptionalNodeOperations, docs/releases.md) against real drivers: calls skipped
only where every device of a driver skips them, the set kept in the checkpoint, the gate, the counters."""

from __future__ import annotations

import json
from typing import Any

import pytest
from nodeenv import GPU, NIC, NodeEnv
from prometheus_client.parser import text_string_to_metric_families

from kubelet_dra.kubelet.cm.dra import PrepareError
from kubelet_dra.kubelet.cm.dra.skips import driver_skips, operations
from kubelet_dra.kubelet.kubelet import Node
from kubelet_dra.kubelet.release import V1_36, V1_37

PREPARE = "NodePrepareResources"
UNPREPARE = "NodeUnprepareResources"
BOTH = frozenset({PREPARE, UNPREPARE})


def uid(obj: dict) -> str:
    return obj["metadata"]["uid"]


def name(obj: dict) -> str:
    return obj["metadata"]["name"]


async def prepared(env: NodeEnv, node: Node, devices: list[tuple[str, str, str]], *skips: list[str] | None):
    """A pod and its claim with these devices and skips, prepared by a manager with the gate on."""
    pod = env.pod(containers=[{"name": "main", "image": "busybox", "resources": {"claims": [{"name": "c"}]}}])
    claim = await env.claim(devices, reserved_for=[pod], skips=skips)
    pod["spec"]["resourceClaims"] = [{"name": "c", "resourceClaimName": name(claim)}]
    manager = env.manager(node, optional_node_operations=True)
    await manager.prepare_resources(pod)
    return manager, pod, claim


def skip_counts(node: Node) -> dict[tuple[str, str], float]:
    """(metric, driver) → value of the two skip counters."""
    return {
        (sample.name, sample.labels["driver_name"]): sample.value
        for family in text_string_to_metric_families(node.metrics.text())
        for sample in family.samples
        if sample.name in ("dra_node_prepare_skips_total", "dra_node_unprepare_skips_total")
    }


def stored_skips(env: NodeEnv) -> dict[str, Any]:
    """Driver → its raw ``SkipNodeOperations`` value in the one checkpoint entry (missing: absent)."""
    data = json.loads(json.loads(env.checkpoint.path.read_text())["Data"])
    [entry] = data["ClaimInfoStateList"]
    return {driver: state["SkipNodeOperations"] for driver, state in entry["DriverState"].items() if len(state) > 1}


async def test_a_driver_skipping_everything_is_never_looked_up_nor_called(env: NodeEnv) -> None:
    async with env.node(optional_node_operations=True) as node:
        await env.start_driver(node, NIC)  # the GPU driver is not even running
        devices = [("gpu", GPU, "device-0"), ("nic", NIC, "device-0")]
        manager, pod, claim = await prepared(env, node, devices, ["*"], None)

        [call] = env.calls(node, PREPARE)
        assert (call.driver, env.sent(call)) == (NIC, [uid(claim)])
        entry = manager.cache.get("default", name(claim))
        assert entry is not None and entry.prepared
        assert entry.driver_state[GPU] == () and manager.get_resources(pod, "main") == entry.cdi_device_ids(driver=NIC)
        assert stored_skips(env) == {GPU: [PREPARE, UNPREPARE]}

        await manager.unprepare_resources(pod)
        [call] = env.calls(node, UNPREPARE)
        assert call.driver == NIC
        assert env.checkpoint.load() == []
        assert skip_counts(node) == {
            ("dra_node_prepare_skips_total", GPU): 1.0,
            ("dra_node_unprepare_skips_total", GPU): 1.0,
        }


async def test_skipping_only_unprepare_prepares_and_skips_the_unprepare(env: NodeEnv) -> None:
    async with env.node(optional_node_operations=True) as node:
        await env.start_driver(node)
        manager, pod, _ = await prepared(env, node, [("gpu", GPU, "device-0")], [UNPREPARE])
        assert len(env.calls(node, PREPARE)) == 1
        assert stored_skips(env) == {GPU: [UNPREPARE]}

        await manager.unprepare_resources(pod)
        assert env.calls(node, UNPREPARE) == []
        assert env.checkpoint.load() == []
        assert skip_counts(node) == {("dra_node_unprepare_skips_total", GPU): 1.0}


async def test_a_call_is_skipped_only_when_every_device_of_the_driver_skips_it(env: NodeEnv) -> None:
    async with env.node(optional_node_operations=True) as node:
        await env.start_driver(node)
        devices = [("gpu", GPU, "device-0"), ("gpu", GPU, "device-1")]
        manager, pod, claim = await prepared(env, node, devices, ["*"], [UNPREPARE])
        assert stored_skips(env) == {GPU: [UNPREPARE]}, "only what both devices skip"
        [call] = env.calls(node, PREPARE)
        assert {d["device_name"] for d in call.response["claims"][uid(claim)]["devices"]} == {"device-0", "device-1"}

        await manager.unprepare_resources(pod)
        assert env.calls(node, UNPREPARE) == []


async def test_a_node_with_the_gate_off_refuses_a_claim_that_asks_to_skip(env: NodeEnv) -> None:
    async with env.node() as node:
        await env.start_driver(node)
        pod = env.pod()
        claim = await env.claim(reserved_for=[pod], skips=[["*"]])
        pod["spec"]["resourceClaims"] = [{"name": "c", "resourceClaimName": name(claim)}]

        with pytest.raises(PrepareError) as failure:
            await env.manager(node).prepare_resources(pod)
        assert str(failure.value) == (
            f"prepare dynamic resources: ResourceClaim {name(claim)}:"
            " DRAOptionalNodeOperations feature gate is disabled on kubelet"
        )
        assert env.calls(node, PREPARE) == []
        assert env.checkpoint.load() == []


async def test_a_136_node_does_not_know_the_field_and_calls_the_driver(env: NodeEnv) -> None:
    async with env.node(release=V1_36) as node:
        await env.start_driver(node)
        pod = env.pod()
        claim = await env.claim(reserved_for=[pod], skips=[["*"]])
        pod["spec"]["resourceClaims"] = [{"name": "c", "resourceClaimName": name(claim)}]
        manager = env.manager(node, release=V1_36)

        await manager.prepare_resources(pod)
        await manager.unprepare_resources(pod)
        assert [len(env.calls(node, method)) for method in (PREPARE, UNPREPARE)] == [1, 1]


@pytest.mark.parametrize(
    ("release", "gate", "calls"),
    [(V1_37, True, 0), (V1_37, False, 0), (V1_36, False, 1)],
    ids=["1.37-gate-on", "1.37-gate-off", "1.36"],
)
async def test_a_checkpointed_skip_after_a_restart(env: NodeEnv, release, gate: bool, calls: int) -> None:
    """Claims checkpointed with a skip set stay skipped when the gate is turned off; a 1.36 kubelet ignores the
    set and unprepares them (the KEP's downgrade caveat)."""
    async with env.node(optional_node_operations=True) as node:
        await env.start_driver(node)
        _, pod, _ = await prepared(env, node, [("gpu", GPU, "device-0")], ["*"])

        restarted = env.manager(node, release=release, optional_node_operations=gate)
        await restarted.unprepare_resources(pod)
        assert len(env.calls(node, UNPREPARE)) == calls
        assert env.checkpoint.load() == []


def test_unknown_values_are_ignored_and_a_star_is_every_operation() -> None:
    assert operations(["*"]) == BOTH
    assert operations(["NodeRebootResources", UNPREPARE]) == {UNPREPARE}
    results = [
        {"driver": GPU, "skipNodeOperations": ["*"]},
        {"driver": GPU, "skipNodeOperations": [UNPREPARE, "Later"]},
        {"driver": NIC, "skipNodeOperations": ["Later"]},
        {"driver": "other.example.com"},
    ]
    assert driver_skips(results) == {GPU: {UNPREPARE}}


async def test_only_a_137_node_exposes_the_skip_counters(env: NodeEnv) -> None:
    for release, exposed in ((V1_36, False), (V1_37, True)):
        async with env.node(release=release) as node:
            assert ("dra_node_prepare_skips_total" in node.metrics.text()) is exposed
