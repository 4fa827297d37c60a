"""A node running the pods bound to it: prepare before start, status Running, unprepare before the final delete."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from conftest import GPU, NAMESPACE, Cluster
from helpers import eventually

from kubelet_dra.kube.client import api_path
from kubelet_dra.node import Node

PREPARE = "NodePrepareResources"
UNPREPARE = "NodeUnprepareResources"


def phase(pod: dict[str, Any] | None) -> str | None:
    return (pod or {}).get("status", {}).get("phase")


async def running(cluster: Cluster, pod: dict[str, Any]) -> dict[str, Any]:
    async def check() -> dict[str, Any] | None:
        current = await cluster.get_pod(pod)
        return current if phase(current) == "Running" else None

    current = await eventually(check, timeout=10)
    assert current is not None, f"pod never became Running: {await cluster.get_pod(pod)}"
    return current


async def gone(cluster: Cluster, pod: dict[str, Any]) -> None:
    async def check() -> bool:
        return await cluster.get_pod(pod) is None

    assert await eventually(check, timeout=10), f"pod still there: {await cluster.get_pod(pod)}"


def ok_calls(node: Node, method: str) -> int:
    return sum(record.status == "OK" for record in node.recorder.records(driver=GPU, method=method))


async def test_pod_is_prepared_runs_and_is_unprepared_before_its_deletion_finishes(cluster: Cluster) -> None:
    async with cluster.node() as node:
        await cluster.start_driver(node)
        pod = await cluster.pod_with_claim()

        current = await running(cluster, pod)
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
        assert (await cluster.get_pod(pod) or {})["metadata"]["resourceVersion"] == current["metadata"][
            "resourceVersion"
        ]

        await cluster.delete_pod(pod)
        await gone(cluster, pod)
        assert ok_calls(node, UNPREPARE) == 1
        assert node.manager is not None and len(node.manager.cache) == 0
        assert ok_calls(node, PREPARE) == 1


async def test_failed_prepare_is_reported_as_event_and_retried(cluster: Cluster) -> None:
    async with cluster.node() as node:
        await cluster.start_driver(node)
        await cluster.driver_command("fault", "set", "prepare-error=no power")
        pod = await cluster.pod_with_claim()

        async def failure_events() -> list[dict[str, Any]]:
            events = await cluster.events(pod)
            return [e for e in events if e["reason"] == "FailedPrepareDynamicResources" and "no power" in e["message"]]

        (event,) = await eventually(failure_events, timeout=10)
        assert event["type"] == "Warning"
        assert event["message"].startswith("Failed to prepare dynamic resources: prepare dynamic resources:")
        await eventually(lambda: len(node.recorder.records(driver=GPU, method=PREPARE)) >= 3)
        assert phase(await cluster.get_pod(pod)) != "Running"
        assert len(await failure_events()) == 1, "a repeated failure is reported once"

        await cluster.driver_command("fault", "clear", "prepare-error")
        await running(cluster, pod)
        assert ok_calls(node, PREPARE) == 1


async def test_pod_whose_unprepare_fails_stays_until_unprepare_succeeds(cluster: Cluster) -> None:
    async with cluster.node() as node:
        await cluster.start_driver(node)
        pod = await cluster.pod_with_claim()
        await running(cluster, pod)
        await cluster.driver_command("fault", "set", "unprepare-error=device busy")

        await cluster.delete_pod(pod)
        await eventually(lambda: len(node.recorder.records(driver=GPU, method=UNPREPARE)) >= 3)
        stuck = await cluster.get_pod(pod)
        assert stuck is not None and stuck["metadata"].get("deletionTimestamp")
        assert ok_calls(node, UNPREPARE) == 0

        await cluster.driver_command("fault", "clear", "unprepare-error")
        await gone(cluster, pod)
        assert ok_calls(node, UNPREPARE) == 1


async def test_device_health_shows_in_the_container_status(cluster: Cluster) -> None:
    async with cluster.node() as node:
        await cluster.start_driver(node, "--health", "--health-interval", "0.5")
        pod = await cluster.pod_with_claim()
        await running(cluster, pod)
        await cluster.driver_command("health", "device-0=Unhealthy", "--message", "ECC errors")

        async def reported() -> list[dict[str, Any]]:
            current = await cluster.get_pod(pod) or {}
            (container,) = current["status"]["containerStatuses"]
            return [r for r in container["allocatedResourcesStatus"][0]["resources"] if r["health"] == "Unhealthy"]

        (resource,) = await eventually(reported, timeout=10)
        assert resource["message"] == "ECC errors"


async def test_deleted_pod_is_reported_failed_with_terminated_containers_before_it_goes(cluster: Cluster) -> None:
    async with cluster.node() as node:
        await cluster.start_driver(node)
        pod = await cluster.pod_with_claim()
        current = await running(cluster, pod)
        started_at = current["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]

        seen: list[tuple[str, dict[str, Any]]] = []

        async def follow() -> None:
            query = {
                "fieldSelector": f"metadata.name={pod['metadata']['name']}",
                "resourceVersion": current["metadata"]["resourceVersion"],
            }
            async with contextlib.aclosing(
                cluster.kube.watch(api_path("", "v1", "pods", namespace=NAMESPACE), query)
            ) as events:
                async for event in events:
                    seen.append((event.type, event.object))
                    if event.type == "DELETED":
                        return

        watcher = asyncio.create_task(follow())
        await cluster.delete_pod(pod)
        await asyncio.wait_for(watcher, timeout=10)

        assert ok_calls(node, UNPREPARE) == 1
        final = [obj for kind, obj in seen if kind == "MODIFIED" and obj["status"].get("phase") == "Failed"]
        assert final, f"no Failed status before the deletion: {[(k, o['status'].get('phase')) for k, o in seen]}"
        status = final[0]["status"]
        (container,) = status["containerStatuses"]
        terminated = container["state"]["terminated"]
        assert (terminated["exitCode"], terminated["reason"], terminated["startedAt"]) == (137, "Error", started_at)
        assert not container["ready"]
        conditions = {c["type"]: c["status"] for c in status["conditions"]}
        assert conditions["Ready"] == conditions["ContainersReady"] == "False"
        assert seen[-1][0] == "DELETED"


async def test_pod_that_succeeds_by_itself_is_unprepared_and_kept(cluster: Cluster) -> None:
    async with cluster.node() as node:
        await cluster.start_driver(node)
        pod = await cluster.pod_with_claim()
        await running(cluster, pod)

        meta = pod["metadata"]
        path = api_path("", "v1", "pods", namespace=NAMESPACE, name=meta["name"]) + "/status"
        await cluster.kube.request(  # as if every container exited 0 (restartPolicy Never)
            "PATCH", path, body={"status": {"phase": "Succeeded"}}, content_type="application/merge-patch+json"
        )

        assert await eventually(lambda: ok_calls(node, UNPREPARE) == 1, timeout=10)
        assert node.manager is not None and len(node.manager.cache) == 0
        await asyncio.sleep(0.5)  # several pod-worker periods: the pod is neither deleted nor changed
        assert phase(await cluster.get_pod(pod)) == "Succeeded"
