"""A node running the pods bound to it: prepare before start, status Running, unprepare before the final delete."""

from __future__ import annotations

import asyncio
from typing import Any

from helpers import eventually
from nodeenv import GPU, NAMESPACE, NodeEnv

from kubelet_dra.kubelet.kubelet import Node
from kubelet_dra.peers.kube.client import api_path

PREPARE = "NodePrepareResources"
UNPREPARE = "NodeUnprepareResources"


def phase(pod: dict[str, Any] | None) -> str | None:
    return (pod or {}).get("status", {}).get("phase")


async def running(env: NodeEnv, pod: dict[str, Any]) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        current = await env.get_pod(pod)
        return current if phase(current) == "Running" else None

    current = await eventually(check, timeout=10)
    assert current is not None, f"pod never became Running: {await env.get_pod(pod)}"
    return current


async def gone(env: NodeEnv, pod: dict[str, Any]) -> None:
    async def check() -> bool:
        return await env.get_pod(pod) is None

    assert await eventually(check, timeout=10), f"pod still there: {await env.get_pod(pod)}"


def ok_calls(node: Node, method: str) -> int:
    return sum(record.status == "OK" for record in node.recorder.records(driver=GPU, method=method))


async def test_pod_is_prepared_runs_and_is_unprepared_before_its_deletion_finishes(env: NodeEnv) -> None:
    async with env.pod_node() as node:
        await env.start_driver(node)
        pod = await env.pod_with_claim()

        current = await running(env, pod)
        prepares = node.recorder.records(driver=GPU, method=PREPARE)
        assert [record.status for record in prepares] == ["OK"]
        assert {c["type"]: c["status"] for c in current["status"]["conditions"]} == {
            "PodReadyToStartContainers": "True",
            "Initialized": "True",
            "Ready": "True",
            "ContainersReady": "True",
            "PodScheduled": "True",
        }
        (container,) = current["status"]["containerStatuses"]
        assert container["ready"] and "running" in container["state"]
        (device,) = next(iter(prepares[0].response["claims"].values()))["devices"]
        assert container["allocatedResourcesStatus"] == [
            {"name": "claim:gpu", "resources": [{"resourceID": device["cdi_device_ids"][0], "health": "Unknown"}]}
        ]

        await asyncio.sleep(0.6)  # several resyncs of the running pod: its status is written only when it changes
        assert (await env.get_pod(pod) or {})["metadata"]["resourceVersion"] == current["metadata"]["resourceVersion"]

        await env.delete_pod(pod)
        await gone(env, pod)
        assert ok_calls(node, UNPREPARE) == 1
        assert node.manager is not None and len(node.manager.cache) == 0
        assert ok_calls(node, PREPARE) == 1


async def test_failed_prepare_is_reported_as_event_and_retried(env: NodeEnv) -> None:
    async with env.pod_node() as node:
        driver = await env.start_driver(node)
        await driver.fault("set", "prepare-error=no power")
        pod = await env.pod_with_claim()

        async def failure_events() -> list[dict[str, Any]]:
            events = await env.events(pod)
            return [e for e in events if e["reason"] == "FailedPrepareDynamicResources" and "no power" in e["message"]]

        (event,) = await eventually(failure_events, timeout=10)
        assert event["type"] == "Warning"
        assert event["message"].startswith("Failed to prepare dynamic resources: prepare dynamic resources:")
        await eventually(lambda: len(node.recorder.records(driver=GPU, method=PREPARE)) >= 3)
        assert phase(await env.get_pod(pod)) != "Running"
        assert len(await failure_events()) == 1, "a repeated failure is reported once"

        await driver.fault("clear", "prepare-error")
        await running(env, pod)
        assert ok_calls(node, PREPARE) == 1


async def test_pod_whose_unprepare_fails_stays_until_unprepare_succeeds(env: NodeEnv) -> None:
    async with env.pod_node() as node:
        driver = await env.start_driver(node)
        pod = await env.pod_with_claim()
        await running(env, pod)
        await driver.fault("set", "unprepare-error=device busy")

        await env.delete_pod(pod)
        await eventually(lambda: len(node.recorder.records(driver=GPU, method=UNPREPARE)) >= 3)
        stuck = await env.get_pod(pod)
        assert stuck is not None and stuck["metadata"].get("deletionTimestamp")
        assert ok_calls(node, UNPREPARE) == 0

        await driver.fault("clear", "unprepare-error")
        await gone(env, pod)
        assert ok_calls(node, UNPREPARE) == 1


async def test_pod_being_terminated_stays_active_so_only_its_worker_unprepares_it(env: NodeEnv) -> None:
    # The kubelet's active pods (filterOutInactivePods) keep a deleted pod until its termination has finished, so
    # the reconcile loop never sends a second NodeUnprepareResources beside the pod worker's (the crash soak saw one).
    async with env.pod_node(reconcile_period=0.1) as node:
        driver = await env.start_driver(node)
        pod = await env.pod_with_claim()
        uid = (await running(env, pod))["metadata"]["uid"]
        await driver.fault("set", "unprepare-error=device busy")

        await env.delete_pod(pod)
        await eventually(lambda: len(node.recorder.records(driver=GPU, method=UNPREPARE)) >= 3)
        await asyncio.sleep(0.3)  # several reconcile periods while the worker's unprepare keeps failing
        assert node.pods is not None and uid in node.pods.active_pod_uids()

        await driver.fault("clear", "unprepare-error")
        await gone(env, pod)
        assert ok_calls(node, UNPREPARE) == 1
        assert uid not in node.pods.active_pod_uids()


async def test_device_health_shows_in_the_container_status(env: NodeEnv) -> None:
    async with env.pod_node() as node:
        driver = await env.start_driver(node, GPU, "--health", "--health-interval", "0.5")
        pod = await env.pod_with_claim()
        await running(env, pod)
        await driver.health("device-0=Unhealthy", "--message", "ECC errors")

        async def reported() -> list[dict[str, Any]]:
            current = await env.get_pod(pod) or {}
            (container,) = current["status"]["containerStatuses"]
            return [r for r in container["allocatedResourcesStatus"][0]["resources"] if r["health"] == "Unhealthy"]

        (resource,) = await eventually(reported, timeout=10)
        assert resource["message"] == "ECC errors"


async def test_pod_that_succeeds_by_itself_is_unprepared_and_kept(env: NodeEnv) -> None:
    async with env.pod_node() as node:
        await env.start_driver(node)
        pod = await env.pod_with_claim()
        await running(env, pod)

        meta = pod["metadata"]
        path = api_path("", "v1", "pods", namespace=NAMESPACE, name=meta["name"]) + "/status"
        await env.kube.request(  # as if every container exited 0 (restartPolicy Never)
            "PATCH", path, body={"status": {"phase": "Succeeded"}}, content_type="application/merge-patch+json"
        )

        assert await eventually(lambda: ok_calls(node, UNPREPARE) == 1, timeout=10)
        assert node.manager is not None and len(node.manager.cache) == 0
        await asyncio.sleep(0.5)  # several pod-worker periods: the pod is neither deleted nor changed
        assert phase(await env.get_pod(pod)) == "Succeeded"


async def test_a_starting_node_registers_the_drivers_already_there_before_it_prepares_their_pods(env: NodeEnv) -> None:
    """As the real kubelet after a restart: a driver slow to answer GetInfo (0.5 s) is registered before the pod
    waiting for it is prepared, so no "DRA driver … is not registered" failure is reported first."""
    env.registry.mkdir(exist_ok=True)  # as the node left it when it stopped
    driver = await env.spawn_driver()
    await driver.fault("set", "getinfo-delay=0.5")
    pod = await env.pod_with_claim()
    async with env.pod_node() as node:
        await running(env, pod)
        assert ok_calls(node, PREPARE) == 1
    failures = [
        event["message"] for event in await env.events(pod) if event["reason"] == "FailedPrepareDynamicResources"
    ]
    assert failures == []
