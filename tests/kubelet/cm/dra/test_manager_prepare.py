"""Prepare and unprepare through the reference driver: batching, shared claims, each failure the kubelet reports."""

from __future__ import annotations

import asyncio
import re

import pytest
from nodeenv import GPU, NodeEnv

from kubelet_dra.kubelet.cm.dra import PrepareError, UnprepareError

PREPARE = "NodePrepareResources"
UNPREPARE = "NodeUnprepareResources"


def uid(obj: dict) -> str:
    return obj["metadata"]["uid"]


def name(obj: dict) -> str:
    return obj["metadata"]["name"]


async def test_one_pod_two_claims_make_one_call_each_way(env: NodeEnv) -> None:
    async with env.node() as node:
        await env.start_driver(node)
        manager = env.manager(node)
        pod = env.pod()
        first = await env.claim([("gpu", GPU, "device-0")], reserved_for=[pod])
        second = await env.claim([("gpu", GPU, "device-1")], reserved_for=[pod])
        pod["spec"]["resourceClaims"] = [
            {"name": "a", "resourceClaimName": name(first)},
            {"name": "b", "resourceClaimName": name(second)},
        ]

        await manager.prepare_resources(pod)

        [call] = env.calls(node, PREPARE)
        assert call.status == "OK"
        assert env.sent(call) == [uid(first), uid(second)]
        stored = {state.claim_name: state for state in env.checkpoint.load()}
        assert set(stored) == {name(first), name(second)}
        for claim, device in ((first, "device-0"), (second, "device-1")):
            state = stored[name(claim)]
            assert state.pod_uids == {uid(pod)}
            [got] = state.driver_state[GPU]
            assert (got.pool_name, got.device_name, got.request_names) == (env.node_name, device, ("gpu",))
            assert any(uid(claim) in cdi_id for cdi_id in got.cdi_device_ids)

        await manager.prepare_resources(pod)  # prepared claims are never sent again
        assert len(env.calls(node, PREPARE)) == 1

        await manager.unprepare_resources(pod)
        [call] = env.calls(node, UNPREPARE)
        assert call.status == "OK"
        assert env.sent(call) == [uid(first), uid(second)]
        assert env.checkpoint.load() == []
        assert not manager.pod_might_need_unprepare(uid(pod))


async def test_shared_claim_is_prepared_once_and_unprepared_after_the_last_pod(env: NodeEnv) -> None:
    async with env.node() as node:
        await env.start_driver(node)
        manager = env.manager(node)
        first_pod, second_pod = env.pod(), env.pod()
        claim = await env.claim(reserved_for=[first_pod, second_pod])
        for pod in (first_pod, second_pod):
            pod["spec"]["resourceClaims"] = [{"name": "shared", "resourceClaimName": name(claim)}]

        await manager.prepare_resources(first_pod)
        await manager.prepare_resources(second_pod)
        assert len(env.calls(node, PREPARE)) == 1
        [state] = env.checkpoint.load()
        assert state.pod_uids == {uid(first_pod), uid(second_pod)}

        await manager.unprepare_resources(first_pod)
        assert env.calls(node, UNPREPARE) == []
        [state] = env.checkpoint.load()
        assert state.pod_uids == {uid(second_pod)}
        assert manager.pod_might_need_unprepare(uid(second_pod))
        assert not manager.pod_might_need_unprepare(uid(first_pod))

        await manager.unprepare_resources(second_pod)
        [call] = env.calls(node, UNPREPARE)
        assert env.sent(call) == [uid(claim)]
        assert env.checkpoint.load() == []


async def test_a_claim_error_fails_the_pod_and_the_retry_sends_every_claim_again(env: NodeEnv) -> None:
    async with env.node() as node:
        pod = env.pod()
        good = await env.claim([("gpu", GPU, "device-0")], reserved_for=[pod])
        bad = await env.claim([("gpu", GPU, "device-1")], reserved_for=[pod])
        pod["spec"]["resourceClaims"] = [
            {"name": "good", "resourceClaimName": name(good)},
            {"name": "bad", "resourceClaimName": name(bad)},
        ]
        driver = await env.start_driver(node, GPU, "--fault-prepare-fail-claim", name(bad))
        manager = env.manager(node)

        with pytest.raises(PrepareError) as failure:
            await manager.prepare_resources(pod)
        assert str(failure.value) == (
            f"prepare dynamic resources: NodePrepareResources failed for ResourceClaim {name(bad)}:"
            f" injected failure (fault prepare-fail-claim) for claim default/{name(bad)}"
        )
        # The pod reference was checkpointed before the call, so a deleted pod is still cleaned up.
        assert {state.claim_name: state.pod_uids for state in env.checkpoint.load()} == {
            name(good): {uid(pod)},
            name(bad): {uid(pod)},
        }

        await driver.fault("clear", "prepare-fail-claim")
        await manager.prepare_resources(pod)
        first, retry = env.calls(node, PREPARE)
        assert env.sent(retry) == env.sent(first) == [uid(good), uid(bad)]
        stored = {state.claim_name: state for state in env.checkpoint.load()}
        assert [d.device_name for d in stored[name(bad)].driver_state[GPU]] == ["device-1"]
        assert {d.device_name for d in stored[name(good)].driver_state[GPU]} == {"device-0"}


async def test_an_answer_for_an_unknown_claim_uid_fails_the_pod(env: NodeEnv) -> None:
    async with env.node() as node:
        pod = env.pod()
        claim = await env.claim(reserved_for=[pod])
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name(claim)}]
        driver = await env.start_driver(node, GPU, "--fault-prepare-unknown-key", "true")
        manager = env.manager(node)

        with pytest.raises(PrepareError) as failure:
            await manager.prepare_resources(pod)
        assert re.fullmatch(
            "prepare dynamic resources: NodePrepareResources returned result for unknown claim UID [0-9a-f-]{36}",
            str(failure.value),
        )
        [call] = env.calls(node, PREPARE)
        [unknown] = set(call.response["claims"]) - {uid(claim)}
        assert str(failure.value).endswith(unknown)

        await driver.fault("clear", "prepare-unknown-key")
        await manager.prepare_resources(pod)
        assert env.sent(env.calls(node, PREPARE)[-1]) == [uid(claim)]


async def test_a_claim_left_out_of_the_answer_fails_the_pod(env: NodeEnv) -> None:
    async with env.node() as node:
        pod = env.pod()
        kept = await env.claim([("gpu", GPU, "device-0")], reserved_for=[pod])
        left_out = await env.claim([("gpu", GPU, "device-1")], reserved_for=[pod])
        pod["spec"]["resourceClaims"] = [
            {"name": "kept", "resourceClaimName": name(kept)},
            {"name": "left-out", "resourceClaimName": name(left_out)},
        ]
        await env.start_driver(node, GPU, "--fault-prepare-omit-claim", name(left_out))
        manager = env.manager(node)

        with pytest.raises(PrepareError) as failure:
            await manager.prepare_resources(pod)
        assert str(failure.value) == "prepare dynamic resources: NodePrepareResources skipped 1 ResourceClaims"
        # The answered claim's devices were recorded in memory; a failed pod writes no checkpoint after the call.
        cached = manager.cache.get("default", name(kept))
        assert cached is not None and not cached.prepared
        assert [d.device_name for d in cached.driver_state[GPU]] == ["device-0"]
        assert all(state.driver_state == {GPU: ()} for state in env.checkpoint.load())


async def test_a_call_that_outlasts_the_timeout_fails_the_pod(env: NodeEnv) -> None:
    async with env.node(call_timeout=0.5) as node:
        pod = env.pod()
        claim = await env.claim(reserved_for=[pod])
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name(claim)}]
        driver = await env.start_driver(node, GPU, "--fault-prepare-block", "true")
        manager = env.manager(node)

        with pytest.raises(PrepareError) as failure:
            await manager.prepare_resources(pod)
        assert str(failure.value) == (
            "prepare dynamic resources: NodePrepareResources: rpc error: code = DeadlineExceeded"
            " desc = context deadline exceeded"
        )
        assert env.calls(node, PREPARE)[0].status == "DEADLINE_EXCEEDED"
        await driver.fault("clear", "prepare-block")


async def test_a_failed_unprepare_keeps_the_claim_until_a_retry_succeeds(env: NodeEnv) -> None:
    async with env.node() as node:
        driver = await env.start_driver(node, GPU, "--fault-unprepare-error", "device busy")
        manager = env.manager(node)
        pod = env.pod()
        claim = await env.claim(reserved_for=[pod])
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name(claim)}]
        await manager.prepare_resources(pod)

        with pytest.raises(UnprepareError) as failure:
            await manager.unprepare_resources(pod)
        assert re.fullmatch(
            r"unprepare dynamic resources: NodeUnprepareResources: rpc error: code = \w+ desc = .*device busy",
            str(failure.value),
        )
        assert [state.claim_uid for state in env.checkpoint.load()] == [uid(claim)]
        assert manager.pod_might_need_unprepare(uid(pod))

        await driver.stop()
        await node.wait_for(lambda: not node.plugins.instances(GPU), timeout=20)
        with pytest.raises(UnprepareError) as failure:
            await manager.unprepare_resources(pod)
        assert str(failure.value) == f"unprepare dynamic resources: DRA driver {GPU} is not registered"

        await env.start_driver(node)
        await manager.unprepare_resources(pod)
        assert env.sent(env.calls(node, UNPREPARE)[-1]) == [uid(claim)]
        assert env.checkpoint.load() == []


async def test_pods_are_prepared_concurrently_so_a_shared_claim_can_be_sent_twice(env: NodeEnv) -> None:
    async with env.node() as node:
        await env.start_driver(node, GPU, "--fault-prepare-delay", "0.5")
        manager = env.manager(node)
        first_pod, second_pod = env.pod(), env.pod()
        claim = await env.claim(reserved_for=[first_pod, second_pod])
        for pod in (first_pod, second_pod):
            pod["spec"]["resourceClaims"] = [{"name": "shared", "resourceClaimName": name(claim)}]

        await asyncio.gather(manager.prepare_resources(first_pod), manager.prepare_resources(second_pod))

        first, second = env.calls(node, PREPARE)
        assert env.sent(first) == env.sent(second) == [uid(claim)]
        assert second.started_at < first.started_at + first.duration, "the calls overlapped"
        [state] = env.checkpoint.load()
        assert state.pod_uids == {uid(first_pod), uid(second_pod)}
        # Each answer replaces the driver's devices for the claim (docs/releases.md): no duplicate CDI IDs.
        assert [device.device_name for device in state.driver_state[GPU]] == ["device-0"]
        assert len(manager.get_resources(first_pod, "main")) == len(set(manager.get_resources(first_pod, "main")))
