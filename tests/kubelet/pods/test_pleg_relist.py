"""The pod workers wait for the node's PLEG relist as the kubelet's do: every sync but a pod's first waits for the
next relist after the worker's previous sync, so a deleted pod is stopped and unprepared at the relist after its
deletion is seen, and its deletion finished at the relist after that.

The relists are made visible by a pod whose prepare keeps failing in the driver: its worker retries at every relist
(its resync, 0.2 s, is shorter than the relist period), and each retry is a recorded ``NodePrepareResources``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import attrs
from helpers import eventually
from nodeenv import GPU, NAMESPACE, RESOURCE, NodeEnv
from test_pod_lifecycle import PREPARE, UNPREPARE, gone, ok_calls, running

from kubelet_dra.kubelet.kubelet import Node
from kubelet_dra.kubelet.pod_backoff import PodSyncPeriods
from kubelet_dra.peers.kube.client import api_path
from kubelet_dra.workbench.testbed.machineload import load_factor

RELIST = 0.4
PERIODS = PodSyncPeriods(back_off_period=0.2, sync_frequency=0.2, relist_period=RELIST)


def relist_times(env: NodeEnv, node: Node) -> list[float]:
    """When the node relisted (wall clock), seen as the retries of a pod whose prepare fails."""
    return [record.started_at for record in env.calls(node, PREPARE, GPU) if record.status != "OK"]


async def just_relisted(env: NodeEnv, node: Node) -> None:
    """Return just after one of the node's relists, seen as the retry of a pod whose prepare fails."""

    def failed() -> int:
        return len(relist_times(env, node))

    if failed() == 0:
        await env.pod_with_claim()
        assert await eventually(lambda: failed() > 0, timeout=10)
    seen = failed()
    assert await eventually(lambda: failed() > seen, timeout=10), "the failing pod was not retried"


async def reserve(env: NodeEnv, claim_name: str, pod: dict[str, Any]) -> None:
    """Add ``pod`` to the claim's ``reservedFor``, as the scheduler does for a pod sharing an allocated claim."""
    path = api_path(RESOURCE, "v1", "resourceclaims", namespace=NAMESPACE, name=claim_name)
    claim = await env.kube.request("GET", path)
    meta = pod["metadata"]
    claim["status"]["reservedFor"].append({"resource": "pods", "name": meta["name"], "uid": meta["uid"]})
    await env.kube.request("PUT", f"{path}/status", body=claim)


async def test_a_pod_joining_a_shared_claim_while_its_last_pod_terminates_keeps_it_prepared(env: NodeEnv) -> None:
    """The second pod must join before the relist at which the first one's worker stops it: a window of one relist
    period, as long as the machine is slow (on a loaded one the pod's first sync takes longer, and a node that
    synced it after the first pod's unprepare would rightly prepare it anew)."""
    relist = RELIST * load_factor()
    async with env.pod_node(pod_sync=attrs.evolve(PERIODS, relist_period=relist)) as node:
        driver = await env.start_driver(node)
        first = await env.pod_with_claim()
        await running(env, first)
        claim = first["spec"]["resourceClaims"][0]["resourceClaimName"]
        await driver.fault("set", "prepare-error=no power")
        await just_relisted(env, node)

        await env.delete_pod(first)  # its worker stops it only at the next relist
        second = env.pod(
            {"gpu": claim},
            containers=[{"name": "main", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
        )
        del second["metadata"]["uid"]
        second = await env.kube.request("POST", api_path("", "v1", "pods", namespace=NAMESPACE), body=second)
        await reserve(env, claim, second)

        await running(env, second)
        await gone(env, first)
        await asyncio.sleep(relist)  # a relist more: the first pod's worker has finished
        assert ok_calls(node, UNPREPARE) == 0
        assert ok_calls(node, PREPARE) == 1, "the second pod runs on the claim the first one prepared"
        assert node.manager is not None
        info = node.manager.cache.get("default", claim)
        assert info is not None and info.pod_uids == {second["metadata"]["uid"]}
        checkpointed = {state.claim_name: state.pod_uids for state in env.checkpoint.load()}
        assert checkpointed[claim] == {second["metadata"]["uid"]}


@contextlib.asynccontextmanager
async def relists_seen(node: Node) -> AsyncIterator[list[float]]:
    """The node's relists from now on, each when it started, on the wall clock of the recorded gRPC calls."""
    assert node.pods is not None
    clock = node.pods.relists
    seen: list[float] = []
    offset = time.time() - clock.now()

    async def follow() -> None:
        latest = clock.last
        while True:
            await clock.newer_than(latest)
            latest = clock.last
            seen.append(latest + offset)

    task = asyncio.create_task(follow())
    try:
        yield seen
    finally:
        task.cancel()


async def test_a_deleted_pod_is_unprepared_at_the_next_relist_and_gone_at_the_one_after(env: NodeEnv) -> None:
    async with env.pod_node(pod_sync=PERIODS) as node, relists_seen(node) as relists:
        driver = await env.start_driver(node)
        pod = await env.pod_with_claim()
        await running(env, pod)
        await driver.fault("set", "prepare-error=no power")  # a pod retried at every relist, as on a busy node
        await just_relisted(env, node)
        # Mid-period: the deletion is seen between two relists and must wait for the next.
        await asyncio.sleep(RELIST / 2)
        deleted = time.time()

        await env.delete_pod(pod)
        assert await eventually(lambda: ok_calls(node, UNPREPARE) == 1, timeout=10)
        await gone(env, pod)
        finished = time.time()

        [unprepare] = [record for record in env.calls(node, UNPREPARE, GPU) if record.status == "OK"]
        after_deletion = [at for at in relists if at > deleted]
        assert after_deletion and unprepare.started_at >= after_deletion[0], "unprepared before the next relist"

        # The deletion finishes at the relist after the unprepare's. A late wake of this test only delays
        # ``finished``, so it can hide this failure but never make one up.
        assert await eventually(lambda: any(at > unprepare.started_at for at in relists), timeout=10)
        next_relist = next(at for at in relists if at > unprepare.started_at)
        assert finished >= next_relist, "deletion finished in the same relist as the unprepare"
