"""The pod statuses a node writes are the real kubelet's: the same normalized history as kubelet 1.36.2 recorded
(tests/fixtures/kubelet-1.36/pod-status-histories.json, by tests/interop/test_pod_status_real_kubelet.py), and a
failed prepare waits for the pod's next sync, not for its own status writes."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from helpers import eventually
from nodeenv import GPU, NAMESPACE, NodeEnv

from kubelet_dra.kubelet.kubelet import Node
from kubelet_dra.kubelet.pod_backoff import PodSyncPeriods
from kubelet_dra.peers.kube.client import api_path
from kubelet_dra.workbench.fidelity import history

REAL = json.loads((Path(__file__).parents[2] / "fixtures" / "kubelet-1.36" / "pod-status-histories.json").read_text())
FAILED_PREPARE = "FailedPrepareDynamicResources"


def from_the_kubelet(lines: list[str]) -> list[str]:
    """The lines from the node's first status on, the container named as in the recording."""
    return [line.replace("main: ", "c: ") for line in history.from_the_kubelet(lines)]


@contextlib.asynccontextmanager
async def watched(env: NodeEnv) -> AsyncIterator[list[tuple[str, dict[str, Any]]]]:
    """Every pod event of the namespace from now on."""
    path = api_path("", "v1", "pods", namespace=NAMESPACE)
    listed = await env.kube.request("GET", path)
    seen: list[tuple[str, dict[str, Any]]] = []

    async def follow() -> None:
        query = {"resourceVersion": listed["metadata"]["resourceVersion"]}
        async with contextlib.aclosing(env.kube.watch(path, query)) as events:
            async for event in events:
                seen.append((event.type, event.object))

    task = asyncio.create_task(follow())
    try:
        yield seen
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def pod_history(seen: list[tuple[str, dict[str, Any]]], pod: dict[str, Any]) -> list[str]:
    name = pod["metadata"]["name"]
    return history.history(None if kind == "DELETED" else obj for kind, obj in seen if obj["metadata"]["name"] == name)


async def phase_is(env: NodeEnv, pod: dict[str, Any], wanted: str) -> bool:
    current = await env.get_pod(pod)
    return (current is None and wanted == "Gone") or ((current or {}).get("status") or {}).get("phase") == wanted


async def until(env: NodeEnv, pod: dict[str, Any], wanted: str) -> None:
    assert await eventually(lambda: phase_is(env, pod, wanted), timeout=10), f"not {wanted}: {await env.get_pod(pod)}"


def failed_prepares(node: Node) -> int:
    return sum(call.status != "OK" for call in node.recorder.records(driver=GPU, method="NodePrepareResources"))


async def failure_events(env: NodeEnv, pod: dict[str, Any]) -> list[dict[str, Any]]:
    return [event for event in await env.events(pod) if event["reason"] == FAILED_PREPARE]


async def test_a_pod_that_runs_and_is_deleted_has_the_real_kubelets_statuses(env: NodeEnv) -> None:
    async with env.pod_node() as node, watched(env) as seen:
        await env.start_driver(node)
        pod = await env.pod_with_claim()
        await until(env, pod, "Running")
        await env.delete_pod(pod)
        await until(env, pod, "Gone")
        await asyncio.sleep(0.2)
    assert from_the_kubelet(pod_history(seen, pod)) == from_the_kubelet(REAL["histories"]["runs-then-deleted"])


async def test_a_pod_whose_prepare_failed_is_deleted_failed_like_on_the_real_kubelet(env: NodeEnv) -> None:
    async with env.pod_node() as node, watched(env) as seen:
        driver = await env.start_driver(node)
        await driver.fault("set", "prepare-error=no power")
        pod = await env.pod_with_claim()
        assert await eventually(lambda: failure_events(env, pod), timeout=10)
        await env.delete_pod(pod)
        await until(env, pod, "Gone")
        await asyncio.sleep(0.2)
    lines = pod_history(seen, pod)
    assert from_the_kubelet(lines) == from_the_kubelet(REAL["histories"]["prepare-fails-then-deleted"])
    assert "Failed deleting=yes" in lines[-2] and "exit=137 (ContainerStatusUnknown)" in lines[-2]


async def test_a_pod_whose_unprepare_fails_shows_its_containers_stopped_until_it_succeeds(env: NodeEnv) -> None:
    async with env.pod_node() as node, watched(env) as seen:
        driver = await env.start_driver(node)
        pod = await env.pod_with_claim()
        await until(env, pod, "Running")
        await driver.fault("set", "unprepare-error=driver down")
        await env.delete_pod(pod)

        async def stopped() -> bool:
            statuses = ((await env.get_pod(pod)) or {}).get("status", {}).get("containerStatuses") or [{}]
            return "terminated" in statuses[0].get("state", {})

        assert await eventually(stopped, timeout=10)
        assert await phase_is(env, pod, "Running"), "the phase stays until the claims are unprepared"
        await driver.fault("clear", "unprepare-error")
        await until(env, pod, "Gone")
        await asyncio.sleep(0.2)
    assert from_the_kubelet(pod_history(seen, pod)) == from_the_kubelet(REAL["histories"]["driver-down-at-deletion"])


async def test_a_restarted_node_shows_the_stopped_containers_of_a_pod_it_was_deleting(env: NodeEnv) -> None:
    """As kubelet 1.36.2 in every run of kubelet-restart-during-unprepare: the pod deleted while the node was down
    shows its containers stopped (ContainersNotReady, terminated) before its terminal phase."""
    async with watched(env) as seen:
        async with env.pod_node() as node:
            await env.start_driver(node)
            pod = await env.pod_with_claim()
            await until(env, pod, "Running")
        await env.delete_pod(pod)
        async with env.pod_node():
            await until(env, pod, "Gone")
        await asyncio.sleep(0.2)
    lines = from_the_kubelet(pod_history(seen, pod))
    stopped = [line for line in lines if line.startswith("Running deleting=yes") and "c: terminated" in line]
    assert stopped and "ContainersReady=False(ContainersNotReady)" in stopped[0], lines
    assert lines.index(stopped[0]) < len(lines) - 2 and lines[-2].startswith("Succeeded deleting=yes"), lines


async def test_a_failed_prepare_is_retried_at_the_next_sync_not_at_its_own_status_writes(env: NodeEnv) -> None:
    # The real kubelet counts a failed prepare as a finished sync: the pod is synced again after the resync period
    # (60-90 s there); the status it wrote meanwhile (Pending, ContainerCreating) does not wake it.
    async with env.pod_node(pod_sync=PodSyncPeriods(back_off_period=0.2, sync_frequency=1.0)) as node:
        driver = await env.start_driver(node)
        await driver.fault("set", "prepare-error=no power")
        pod = await env.pod_with_claim()
        # The driver's own refusal, not a sync before the driver registered (its event says "not registered").
        assert await eventually(lambda: failed_prepares(node), timeout=10)
        await driver.fault("clear", "prepare-error")
        await until(env, pod, "Running")
    calls = node.recorder.records(driver=GPU, method="NodePrepareResources")
    assert [call.status for call in calls][-1] == "OK" and "OK" not in [call.status for call in calls][:-1]
    gaps = [after.started_at - (before.started_at + before.duration) for before, after in itertools.pairwise(calls)]
    assert gaps and min(gaps) >= 1.0, f"a retry came before the resync period: {gaps}"


async def test_a_pod_whose_prepare_failed_is_synced_at_the_next_relist_when_it_changes(env: NodeEnv) -> None:
    async with env.pod_node(pod_sync=PodSyncPeriods(back_off_period=0.2, sync_frequency=60.0)) as node:
        driver = await env.start_driver(node)
        await driver.fault("set", "prepare-error=no power")
        pod = await env.pod_with_claim()
        assert await eventually(lambda: failure_events(env, pod), timeout=10)
        await driver.fault("clear", "prepare-error")
        path = api_path("", "v1", "pods", namespace=NAMESPACE, name=pod["metadata"]["name"])
        patch = {"metadata": {"labels": {"touched": "yes"}}}
        await env.kube.request("PATCH", path, body=patch, content_type="application/merge-patch+json")
        await until(env, pod, "Running")  # long before the 60 s resync
