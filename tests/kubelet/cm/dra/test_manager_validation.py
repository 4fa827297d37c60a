"""A pod whose claims cannot be used fails before the claim info cache changes, with the kubelet's texts."""

from __future__ import annotations

import attrs
import pytest
from nodeenv import GPU, NodeEnv

from kubelet_dra.kubelet.cm.dra import DRAManager, PrepareError
from kubelet_dra.kubelet.cm.dra.drivers import DriverInstance
from kubelet_dra.kubelet.kubelet import Node
from kubelet_dra.kubelet.metrics.metrics import DRAMetrics
from kubelet_dra.peers.errors import StateError
from kubelet_dra.peers.kube.client import KubeClient, api_path


def uid(obj: dict) -> str:
    return obj["metadata"]["uid"]


def name(obj: dict) -> str:
    return obj["metadata"]["name"]


async def refused(env: NodeEnv, node: Node, manager: DRAManager, pod: dict) -> str:
    """The text prepare fails with, after checking that nothing was cached, written or sent."""
    with pytest.raises(PrepareError) as failure:
        await manager.prepare_resources(pod)
    assert len(manager.cache) == 0
    assert env.checkpoint.load() == []
    assert node.recorder.records() == []
    return str(failure.value)


class BrokenStore:
    """A plugin store with a bug: its lookup fails with an error that is not the kubelet's refusal."""

    def get_plugin(self, driver_name: str) -> DriverInstance:
        raise LookupError(f"a bug in the store while looking up {driver_name}")


@attrs.frozen
class Parts:
    """The manager's view of a node (``manager.NodeParts``), with the plugin store given."""

    name: str
    kube: KubeClient | None
    plugins: BrokenStore
    metrics: DRAMetrics


async def test_a_bug_in_the_plugin_store_surfaces_as_itself_not_as_a_pod_s_prepare_error(env: NodeEnv) -> None:
    async with env.node(health=False) as node:
        manager = DRAManager(Parts(node.name, node.kube, BrokenStore(), node.metrics), env.checkpoint)
        pod = env.pod()
        claim = await env.claim(reserved_for=[pod])
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name(claim)}]
        with pytest.raises(LookupError, match=f"^a bug in the store while looking up {GPU}$"):
            await manager.prepare_resources(pod)


async def test_each_claim_problem_is_reported_like_the_kubelet(env: NodeEnv) -> None:
    async with env.node(health=False) as node:
        manager = env.manager(node)
        pod = env.pod()
        meta = pod["metadata"]
        prefix = "prepare dynamic resources: "

        stranger = await env.claim(reserved_for=[env.pod()])
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name(stranger)}]
        assert await refused(env, node, manager, pod) == (
            f"{prefix}pod {meta['name']} ({meta['uid']}) is not allowed to use ResourceClaim"
            f" {name(stranger)} ({uid(stranger)})"
        )

        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": "missing"}]
        assert await refused(env, node, manager, pod) == (
            f'{prefix}fetch ResourceClaim missing: resourceclaims.resource.k8s.io "missing" not found'
        )

        usable = await env.claim(reserved_for=[pod])
        pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name(usable)}]
        assert await refused(env, node, manager, pod) == f"{prefix}DRA driver {GPU} is not registered"

        pod["spec"]["resourceClaims"] = [{"name": "odd"}]
        assert await refused(env, node, manager, pod) == (
            f'{prefix}pod "default/{meta["name"]}", spec.resourceClaim "odd": none of the supported fields are set'
        )


async def test_template_claims_need_a_status_entry_and_the_pod_as_owner(env: NodeEnv) -> None:
    async with env.node(health=False) as node:
        manager = env.manager(node)
        prefix = "prepare dynamic resources: "

        pending = env.pod(templates={"gpu": "whatever"})
        pending["status"]["resourceClaimStatuses"] = []
        assert await refused(env, node, manager, pending) == (
            f'{prefix}pod "default/{name(pending)}": ResourceClaim not created yet'
        )

        pod = env.pod(templates={"gpu": None})
        foreign = await env.claim(reserved_for=[pod], owner=env.pod())
        pod["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": name(foreign)}]}
        assert await refused(env, node, manager, pod) == (
            f"{prefix}ResourceClaim default/{name(foreign)} was not created for Pod default/{name(pod)}"
            " (Pod is not owner)"
        )

        owned = await env.claim(reserved_for=[pod], owner=pod)
        pod["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": name(owned)}]}
        assert await refused(env, node, manager, pod) == f"{prefix}DRA driver {GPU} is not registered"

        not_created = env.pod(templates={"gpu": None})  # the controller decided no claim is needed
        await manager.prepare_resources(not_created)
        assert len(manager.cache) == 0


async def test_claims_without_devices_are_prepared_without_a_call_and_a_replaced_claim_is_refused(env: NodeEnv) -> None:
    async with env.node(health=False) as node:
        manager = env.manager(node)
        first, second = env.pod(), env.pod()
        claim = await env.claim([], reserved_for=[first, second])
        for pod in (first, second):
            pod["spec"]["resourceClaims"] = [{"name": "none", "resourceClaimName": name(claim)}]

        await manager.prepare_resources(first)
        [state] = env.checkpoint.load()
        assert (state.claim_uid, state.pod_uids, dict(state.driver_state)) == (uid(claim), {uid(first)}, {})
        assert node.recorder.records() == []

        path = api_path("resource.k8s.io", "v1", "resourceclaims", namespace="default", name=name(claim))
        await env.kube.request("DELETE", path)
        replacement = await env.claim([], reserved_for=[second], name=name(claim))
        with pytest.raises(PrepareError) as failure:
            await manager.prepare_resources(second)
        assert str(failure.value) == (
            f"prepare dynamic resources: old ResourceClaim with same name {name(replacement)} and different UID"
            f" {uid(claim)} still exists (previous pod force-deleted?!)"
        )
        [state] = env.checkpoint.load()
        assert state.pod_uids == {uid(first)}


async def test_a_corrupt_checkpoint_stops_the_manager_from_starting(env: NodeEnv) -> None:
    async with env.node(health=False) as node:
        env.state_dir.mkdir()
        env.checkpoint.path.write_text('{"Data":"{}","Checksum":1}')
        with pytest.raises(StateError) as failure:
            DRAManager(node, env.checkpoint)
        assert failure.value.what.startswith(
            "create ResourceClaim cache: GetOrCreate() on checkpoint state: failed to get checkpoint"
            " dra_manager_state: checkpoint is corrupted"
        )
        assert failure.value.where == str(env.checkpoint.path)
