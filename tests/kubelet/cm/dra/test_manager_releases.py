"""What the DRA manager does differently as a 1.36 and as a 1.37 kubelet (docs/releases.md), against
the reference driver: unprepare by the claim cache, only for pods that use the claim, and no prepare that
joins a claim being unprepared."""

from __future__ import annotations

import asyncio

import pytest
from nodeenv import GPU, NodeEnv, unique

from kubelet_dra.kubelet.cm.dra import PrepareError, UnprepareError
from kubelet_dra.kubelet.release import V1_36, V1_37, KubeletRelease

PREPARE = "NodePrepareResources"
UNPREPARE = "NodeUnprepareResources"
RELEASES = pytest.mark.parametrize("release", [V1_36, V1_37], ids=["1.36", "1.37"])


def uid(obj: dict) -> str:
    return obj["metadata"]["uid"]


def name(obj: dict) -> str:
    return obj["metadata"]["name"]


@RELEASES
async def test_unprepare_finds_the_claims_in_the_cache_when_the_pod_status_no_longer_names_them(
    env: NodeEnv, release: KubeletRelease
) -> None:
    async with env.node(release=release) as node:
        await env.start_driver(node)
        manager = env.manager(node, release=release)
        pod = env.pod(templates={"gpu": unique("claim")})
        claim_name = pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
        claim = await env.claim(name=claim_name, owner=pod, reserved_for=[pod])
        await manager.prepare_resources(pod)
        pod["status"] = {}  # a status update that dropped the claim names (1.36 API servers let it happen)

        if release.unprepare_names_from_cache:
            await manager.unprepare_resources(pod)
            [call] = env.calls(node, UNPREPARE)
            assert env.sent(call) == [uid(claim)]
            assert env.checkpoint.load() == []
        else:
            with pytest.raises(UnprepareError) as failure:
                await manager.unprepare_resources(pod)
            assert str(failure.value) == (
                f'unprepare dynamic resources: pod "default/{name(pod)}": ResourceClaim not created yet'
            )
            assert env.calls(node, UNPREPARE) == []
            assert manager.pod_might_need_unprepare(uid(pod))


@RELEASES
async def test_unprepare_for_a_pod_that_never_used_the_claim(env: NodeEnv, release: KubeletRelease) -> None:
    """1.36 unprepares a claim whose only user is another pod; 1.37 leaves it to that pod."""
    async with env.node(release=release) as node:
        await env.start_driver(node)
        manager = env.manager(node, release=release)
        user, stranger = env.pod(), env.pod()
        claim = await env.claim(reserved_for=[user])
        for pod in (user, stranger):
            pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name(claim)}]
        await manager.prepare_resources(user)

        await manager.unprepare_resources(stranger)

        if release.unprepare_needs_pod_reference:
            assert env.calls(node, UNPREPARE) == []
            [state] = env.checkpoint.load()
            assert state.pod_uids == {uid(user)}
            assert manager.get_resources(user, "main") == []  # the container uses no claim, the entry is there
            assert manager.cache.get("default", name(claim)) is not None
        else:
            [call] = env.calls(node, UNPREPARE)
            assert env.sent(call) == [uid(claim)]
            assert env.checkpoint.load() == [], "the claim the running pod uses is gone from the node"


@RELEASES
async def test_a_prepare_that_finds_its_claim_being_unprepared(env: NodeEnv, release: KubeletRelease) -> None:
    async with env.node(release=release) as node:
        driver = await env.start_driver(node, GPU, "--fault-unprepare-block", "true")
        manager = env.manager(node, release=release)
        leaving, arriving = env.pod(), env.pod()
        claim = await env.claim(reserved_for=[leaving, arriving])
        for pod in (leaving, arriving):
            pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name(claim)}]
        await manager.prepare_resources(leaving)

        unprepare = asyncio.create_task(manager.unprepare_resources(leaving))
        entry = manager.cache.get("default", name(claim))
        assert entry is not None
        await node.wait_for(lambda: entry.unpreparing, timeout=10)
        if release.prepare_refuses_unpreparing:
            with pytest.raises(PrepareError) as failure:
                await manager.prepare_resources(arriving)
            assert str(failure.value) == (
                f"prepare dynamic resources: ResourceClaim {name(claim)} is being unprepared for its previous pod;"
                " it is prepared again once that has finished"
            )
        else:
            await manager.prepare_resources(arriving)  # joins the claim: prepared, so no call

        await driver.fault("clear", "unprepare-block")
        await unprepare
        assert manager.cache.get("default", name(claim)) is None
        if release.prepare_refuses_unpreparing:
            await manager.prepare_resources(arriving)  # the pod worker's retry
            assert [env.sent(call) for call in env.calls(node, PREPARE)] == [[uid(claim)], [uid(claim)]]
            [state] = env.checkpoint.load()
            assert state.pod_uids == {uid(arriving)}
        else:
            assert len(env.calls(node, PREPARE)) == 1
            assert not manager.pod_might_need_unprepare(uid(arriving)), "the arriving pod lost its claim"


async def test_a_failed_unprepare_lets_the_claim_be_used_again(env: NodeEnv) -> None:
    async with env.node() as node:
        await env.start_driver(node, GPU, "--fault-unprepare-error", "device busy")
        manager = env.manager(node)
        pod = env.pod()
        claim = await env.claim(reserved_for=[pod])
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name(claim)}]
        await manager.prepare_resources(pod)

        with pytest.raises(UnprepareError):
            await manager.unprepare_resources(pod)
        entry = manager.cache.get("default", name(claim))
        assert entry is not None and not entry.unpreparing
        await manager.prepare_resources(pod)
