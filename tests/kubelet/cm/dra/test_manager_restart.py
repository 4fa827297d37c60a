"""A restarted manager works from the checkpoint: it unprepares what its predecessor prepared, and re-prepares."""

from __future__ import annotations

import pytest
from nodeenv import GPU, NodeEnv

from kubelet_dra.kubelet.kubelet import Node
from kubelet_dra.kubelet.release import V1_36, V1_37, KubeletRelease

PREPARE = "NodePrepareResources"
UNPREPARE = "NodeUnprepareResources"


def uid(obj: dict) -> str:
    return obj["metadata"]["uid"]


def name(obj: dict) -> str:
    return obj["metadata"]["name"]


def claim_specs(env: NodeEnv, claim: dict) -> list[str]:
    """The driver's CDI spec files for the claim."""
    return [path.name for path in (env.root / "cdi").iterdir() if uid(claim) in path.name]


async def prepared_pod(env: NodeEnv, node: Node) -> tuple[dict, dict]:
    pod = env.pod(containers=[{"name": "main", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}])
    claim = await env.claim(reserved_for=[pod])
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name(claim)}]
    await env.manager(node).prepare_resources(pod)
    return pod, claim


async def test_a_new_manager_unprepares_what_the_old_one_prepared(env: NodeEnv) -> None:
    async with env.node() as node:
        await env.start_driver(node)
        pod, claim = await prepared_pod(env, node)
    assert claim_specs(env, claim), "the driver writes a CDI spec file per prepared claim"

    # A kubelet restart: new node, new manager, same state dir, same driver (the Node object exists already).
    async with env.node() as node:
        await node.wait_for(lambda: node.plugins.usable(GPU), timeout=20)
        restarted = env.manager(node)
        entry = restarted.cache.get("default", name(claim))
        assert entry is not None and entry.pod_uids == {uid(pod)} and not entry.prepared
        assert restarted.pod_might_need_unprepare(uid(pod))

        await restarted.unprepare_resources(pod)
        [call] = env.calls(node, UNPREPARE)
        assert (call.status, env.sent(call)) == ("OK", [uid(claim)])
        assert env.checkpoint.load() == []
        assert claim_specs(env, claim) == []


@pytest.mark.parametrize(("release", "times"), [(V1_36, 2), (V1_37, 1)], ids=["1.36", "1.37"])
async def test_a_restarted_manager_prepares_again_and_replaces_or_appends_the_devices(
    env: NodeEnv, release: KubeletRelease, times: int
) -> None:
    """The driver's new answer replaces its devices for the claim in 1.37; kubelet v1.36.2 appends it, so each device
    and CDI ID is there twice (as its real DRA manager did in ``replay --compare``, docs/fidelity.md)."""
    async with env.node(release=release) as node:
        await env.start_driver(node)
        pod, claim = await prepared_pod(env, node)
        before = env.manager(node).get_resources(pod, "main")

        restarted = env.manager(node, release=release)
        await restarted.prepare_resources(pod)
        assert len(env.calls(node, PREPARE)) == 2
        [state] = env.checkpoint.load()
        assert [device.device_name for device in state.driver_state[GPU]] == ["device-0"] * times
        ids = restarted.get_resources(pod, "main")
        assert ids == before * times and len(before) == 2 and uid(claim) in before[1]
