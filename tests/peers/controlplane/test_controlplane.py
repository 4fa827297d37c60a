"""The control plane against a real embedded API server: claims, allocation, reservation, clean-up."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from cluster_support import (
    NAMESPACE,
    create_claim,
    create_class,
    create_pod,
    create_slice,
    create_template,
    device,
    devices_of,
    get_claim,
    get_pod,
    list_claims,
    pod_events,
    request,
    reserved_uids,
    slice_manifest,
)
from helpers import eventually

from kubelet_dra.peers.controlplane import ControlPlane
from kubelet_dra.peers.controlplane.cluster import claims_path, pods_path, snapshot
from kubelet_dra.peers.controlplane.names import POD_CLAIM_NAME_ANNOTATION
from kubelet_dra.peers.controlplane.resourceclaim import ClaimController
from kubelet_dra.peers.kube.client import KubeApiError, KubeClient

DRIVER = "gpu.example.com"
NODE = "node-a"


async def cluster(kube: KubeClient, *devices: dict[str, Any], node: str = NODE) -> None:
    await create_class(kube, "gpu", [f'device.driver == "{DRIVER}"'])
    await create_slice(kube, slice_manifest(f"{node}-slice", DRIVER, node, list(devices)))


async def allocated(kube: KubeClient, name: str) -> dict[str, Any] | None:
    claim = await get_claim(kube, name)
    return claim if reserved_uids(claim) else None


async def generated_claim(kube: KubeClient, pod: str) -> str:
    statuses = (await get_pod(kube, pod)).get("status", {}).get("resourceClaimStatuses") or []
    return statuses[0]["resourceClaimName"] if statuses else ""


async def test_a_template_claim_is_created_owned_recorded_allocated_and_reserved(kube: KubeClient) -> None:
    await cluster(kube, device("device-0"), device("device-1", model="H100"))
    await create_template(kube, "h100", [request("gpu", "gpu", [f'device.attributes["{DRIVER}"].model == "H100"'])])
    pod = await create_pod(kube, "trainer", [{"name": "accel", "resourceClaimTemplateName": "h100"}], node=NODE)
    async with ControlPlane(kube):
        name = await eventually(lambda: generated_claim(kube, "trainer"))
        claim = await eventually(lambda: allocated(kube, name))
    assert name.startswith("trainer-accel-")
    meta = claim["metadata"]
    assert meta["annotations"][POD_CLAIM_NAME_ANNOTATION] == "accel"
    assert meta["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "trainer",
            "uid": pod["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert claim["status"]["allocation"]["devices"]["results"] == [
        {"request": "gpu", "driver": DRIVER, "pool": NODE, "device": "device-1"}
    ]
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "trainer", "uid": pod["metadata"]["uid"]}]


async def test_a_failed_pod_status_write_does_not_create_a_second_claim(kube: KubeClient) -> None:
    await create_template(kube, "tpl", [request("gpu", "gpu")])
    await create_pod(kube, "web", [{"name": "gpu", "resourceClaimTemplateName": "tpl"}])
    stale = await snapshot(kube)
    fresh = await get_pod(kube, "web")
    fresh["metadata"].setdefault("labels", {})["touched"] = "yes"
    await kube.request("PUT", pods_path(NAMESPACE, "web"), body=fresh)
    controller = ClaimController(kube)
    (stale_pod,) = stale.pods
    with pytest.raises(KubeApiError) as conflict:
        await controller.sync_pod(stale_pod, stale)
    assert conflict.value.code == 409
    (created,) = await list_claims(kube)
    assert await generated_claim(kube, "web") == ""
    async with ControlPlane(kube):
        name = await eventually(lambda: generated_claim(kube, "web"))
    assert name == created["metadata"]["name"]
    assert [claim["metadata"]["name"] for claim in await list_claims(kube)] == [name]


async def test_a_claim_another_controller_records_first_wins_and_ours_is_deleted(kube: KubeClient) -> None:
    """On a real cluster, kube-controller-manager generates the pod's claim too; its status write can land first (or
    replace our entry): ours, made for nothing, is deleted so that the recorded claim gets the node's one device."""
    await cluster(kube, device("device-0"))
    await create_template(kube, "tpl", [request("gpu", "gpu")])
    pod = await create_pod(kube, "web", [{"name": "gpu", "resourceClaimTemplateName": "tpl"}], node=NODE)
    plane = ControlPlane(kube)
    stale = await snapshot(kube)
    theirs = await kube.request(
        "POST",
        claims_path(NAMESPACE),
        body={
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {
                "name": "web-gpu-theirs",
                "namespace": NAMESPACE,
                "annotations": {POD_CLAIM_NAME_ANNOTATION: "gpu"},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": "web",
                        "uid": pod["metadata"]["uid"],
                        "controller": True,
                    },
                ],
            },
            "spec": {"devices": {"requests": [request("gpu", "gpu")]}},
        },
    )

    async def only_theirs() -> bool:
        return [claim["metadata"]["name"] for claim in await list_claims(kube)] == ["web-gpu-theirs"]

    fresh = await get_pod(kube, "web")
    fresh["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "web-gpu-theirs"}]}
    await kube.request("PUT", pods_path(NAMESPACE, "web") + "/status", body=fresh)
    (stale_pod,) = stale.pods
    with pytest.raises(KubeApiError):  # ours is created, its status write refused: theirs is recorded
        await plane.claims.sync_pod(stale_pod, stale)
    assert len(await list_claims(kube)) == 2
    async with plane:
        claim = await eventually(lambda: allocated(kube, "web-gpu-theirs"))
        assert await eventually(only_theirs)
    assert claim["metadata"]["uid"] == theirs["metadata"]["uid"]
    assert devices_of(claim) == ["device-0"]


async def test_a_pod_created_bound_with_a_named_claim_gets_it_allocated_and_reserved(kube: KubeClient) -> None:
    await cluster(kube, device("device-0"))
    await create_claim(kube, "shared-one", [request("gpu", "gpu")])
    pod = await create_pod(kube, "bound", [{"name": "gpu", "resourceClaimName": "shared-one"}], node=NODE)
    async with ControlPlane(kube):
        claim = await eventually(lambda: allocated(kube, "shared-one"))
    assert reserved_uids(claim) == [pod["metadata"]["uid"]]
    assert devices_of(claim) == ["device-0"]


async def test_a_second_pod_on_the_node_joins_reserved_for_of_an_allocated_claim(kube: KubeClient) -> None:
    await cluster(kube, device("device-0"))
    await create_claim(kube, "c", [request("gpu", "gpu")])
    first = await create_pod(kube, "one", [{"name": "gpu", "resourceClaimName": "c"}], node=NODE)
    async with ControlPlane(kube):
        await eventually(lambda: allocated(kube, "c"))
        second = await create_pod(kube, "two", [{"name": "gpu", "resourceClaimName": "c"}], node=NODE)
        claim = await eventually(lambda: _reserved_for(kube, "c", 2))
    assert reserved_uids(claim) == [first["metadata"]["uid"], second["metadata"]["uid"]]
    assert devices_of(claim) == ["device-0"]


async def _reserved_for(kube: KubeClient, name: str, count: int) -> dict[str, Any] | None:
    claim = await get_claim(kube, name)
    return claim if len(reserved_uids(claim)) == count else None


async def test_exclusive_devices_go_to_one_claim_and_the_other_pod_gets_an_event(kube: KubeClient) -> None:
    await cluster(kube, device("device-0"))
    await create_claim(kube, "first", [request("gpu", "gpu")])
    await create_claim(kube, "second", [request("gpu", "gpu")])
    await create_pod(kube, "p1", [{"name": "gpu", "resourceClaimName": "first"}], node=NODE)
    async with ControlPlane(kube):
        await eventually(lambda: allocated(kube, "first"))
        await create_pod(kube, "p2", [{"name": "gpu", "resourceClaimName": "second"}], node=NODE)
        (event,) = await eventually(lambda: pod_events(kube, "p2"))
    assert event["reason"] == "FailedScheduling" and event["type"] == "Warning"
    assert event["message"] == (
        "cannot allocate ResourceClaim second: request 'gpu': "
        "needs 1 device(s), 0 of 1 matching devices on node 'node-a' fit (device-0: in use)"
    )
    assert "allocation" not in (await get_claim(kube, "second")).get("status", {})


async def test_shared_devices_serve_several_claims(kube: KubeClient) -> None:
    await cluster(kube, device("device-0", shared=True))
    for name in ("a", "b"):
        await create_claim(kube, name, [request("gpu", "gpu")])
        await create_pod(kube, f"pod-{name}", [{"name": "gpu", "resourceClaimName": name}], node=NODE)
    async with ControlPlane(kube):
        claims = [await eventually(lambda name=name: allocated(kube, name)) for name in ("a", "b")]
    assert [devices_of(claim) for claim in claims] == [["device-0"], ["device-0"]]


async def test_the_third_pod_on_a_device_with_two_shares_waits_with_an_event_naming_the_capacity(
    kube: KubeClient,
) -> None:
    two_shares = {"name": "nic-0", "allowMultipleAllocations": True, "capacity": {"vfs": {"value": "2"}}}
    await cluster(kube, two_shares)
    one_vf = request("vf", "gpu")
    one_vf["exactly"]["capacity"] = {"requests": {"vfs": "1"}}
    for name in ("a", "b", "c"):
        await create_claim(kube, name, [one_vf])
    async with ControlPlane(kube):
        for name in ("a", "b"):
            await create_pod(kube, f"pod-{name}", [{"name": "vf", "resourceClaimName": name}], node=NODE)
            await eventually(lambda name=name: allocated(kube, name))
        await create_pod(kube, "pod-c", [{"name": "vf", "resourceClaimName": "c"}], node=NODE)
        (event,) = await eventually(lambda: pod_events(kube, "pod-c"))
    results = [(await get_claim(kube, name))["status"]["allocation"]["devices"]["results"] for name in ("a", "b")]
    assert [r["consumedCapacity"] for [r] in results] == [{"vfs": "1"}, {"vfs": "1"}]
    assert len({r["shareID"] for [r] in results}) == 2
    assert event["message"] == (
        "cannot allocate ResourceClaim c: request 'vf': needs 1 device(s), 0 of 1 matching devices on node 'node-a'"
        " fit (nic-0: capacity vfs has 0 of 2 left, 1 needed)"
    )


async def test_a_claim_needing_a_missing_model_leaves_the_pod_pending_with_a_clear_event(kube: KubeClient) -> None:
    await cluster(kube, device("device-0"))
    await create_template(kube, "v100", [request("big", "gpu", [f'device.attributes["{DRIVER}"].model == "V100"'])])
    await create_pod(kube, "waiting", [{"name": "accel", "resourceClaimTemplateName": "v100"}], node=NODE)
    async with ControlPlane(kube):
        (event,) = await eventually(lambda: pod_events(kube, "waiting"))
        name = await generated_claim(kube, "waiting")
    assert event["message"] == (
        f"cannot allocate ResourceClaim {name}: request 'big': "
        "no device on node 'node-a' matches the selectors (1 devices checked)"
    )
    assert not reserved_uids(await get_claim(kube, name))


async def test_a_selector_nested_too_deep_fails_its_claim_and_the_others_are_allocated(kube: KubeClient) -> None:
    """A DeviceClass whose selector nests 500 parentheses stalled every reconcile pass (a RecursionError)."""
    await cluster(kube, device("device-0"), device("device-1"))
    await create_class(kube, "deep", ["(" * 500 + "true" + ")" * 500])
    await create_claim(kube, "deep", [request("gpu", "deep")])
    await create_claim(kube, "fine", [request("gpu", "gpu")])
    await create_pod(kube, "deep", [{"name": "gpu", "resourceClaimName": "deep"}], node=NODE)
    await create_pod(kube, "fine", [{"name": "gpu", "resourceClaimName": "fine"}], node=NODE)
    async with ControlPlane(kube):
        (event,) = await eventually(lambda: pod_events(kube, "deep"))
        assert await eventually(lambda: allocated(kube, "fine"))
    assert "cannot allocate ResourceClaim deep: request 'gpu'" in event["message"], event
    assert "nested too deep" in event["message"], event


async def test_devices_on_another_node_are_not_allocated(kube: KubeClient) -> None:
    await cluster(kube, device("device-0"), node="node-b")
    await create_claim(kube, "c", [request("gpu", "gpu")])
    await create_pod(kube, "p", [{"name": "gpu", "resourceClaimName": "c"}], node=NODE)
    async with ControlPlane(kube):
        (event,) = await eventually(lambda: pod_events(kube, "p"))
    assert "no device on node 'node-a'" in event["message"]


async def test_a_deleted_pod_is_unreserved_and_the_claim_deallocated(kube: KubeClient) -> None:
    await cluster(kube, device("device-0"))
    await create_claim(kube, "c", [request("gpu", "gpu")])
    await create_pod(kube, "p", [{"name": "gpu", "resourceClaimName": "c"}], node=NODE)
    async with ControlPlane(kube):
        await eventually(lambda: allocated(kube, "c"))
        await kube.request("DELETE", pods_path(NAMESPACE, "p"), query={"gracePeriodSeconds": "0"})
        claim = await eventually(lambda: _released(kube, "c"))
    assert claim["status"] == {}


async def _released(kube: KubeClient, name: str) -> dict[str, Any] | None:
    claim = await get_claim(kube, name)
    return None if (claim.get("status") or {}).get("allocation") else claim


async def test_a_finished_pod_loses_its_generated_claim_and_frees_the_device(kube: KubeClient) -> None:
    await cluster(kube, device("device-0"))
    await create_template(kube, "tpl", [request("gpu", "gpu")])
    await create_pod(kube, "job", [{"name": "gpu", "resourceClaimTemplateName": "tpl"}], node=NODE)
    async with ControlPlane(kube):
        name = await eventually(lambda: generated_claim(kube, "job"))
        await eventually(lambda: allocated(kube, name))
        pod = await get_pod(kube, "job")
        pod["status"]["phase"] = "Succeeded"
        await kube.request("PUT", pods_path(NAMESPACE, "job") + "/status", body=pod)
        assert await eventually(lambda: _no_claims(kube))
        await create_template(kube, "tpl2", [request("gpu", "gpu")])
        await create_pod(kube, "next", [{"name": "gpu", "resourceClaimTemplateName": "tpl2"}], node=NODE)
        following = await eventually(lambda: generated_claim(kube, "next"))
        claim = await eventually(lambda: allocated(kube, following))
    assert devices_of(claim) == ["device-0"]


async def _no_claims(kube: KubeClient) -> bool:
    return not await list_claims(kube)


async def test_the_control_plane_keeps_watching_after_the_server_ends_its_watches(kube: KubeClient) -> None:
    await cluster(kube, device("device-0"))
    await create_claim(kube, "c", [request("gpu", "gpu")])
    async with ControlPlane(kube, watch_timeout=1):
        await asyncio.sleep(1.5)
        await create_pod(kube, "late", [{"name": "gpu", "resourceClaimName": "c"}], node=NODE)
        assert await eventually(lambda: allocated(kube, "c"), timeout=5)


async def test_a_pod_that_cannot_get_all_its_claims_holds_no_devices(kube: KubeClient) -> None:
    await cluster(kube, device("device-0"))
    await create_claim(kube, "fits", [request("gpu", "gpu")])
    await create_claim(kube, "too-big", [request("gpu", "gpu", count=2)])
    claims = [{"name": "a", "resourceClaimName": "fits"}, {"name": "b", "resourceClaimName": "too-big"}]
    await create_pod(kube, "greedy", claims, node=NODE)
    async with ControlPlane(kube):
        (event,) = await eventually(lambda: pod_events(kube, "greedy"))
        await create_claim(kube, "small", [request("gpu", "gpu")])
        await create_pod(kube, "modest", [{"name": "a", "resourceClaimName": "small"}], node=NODE)
        assert await eventually(lambda: allocated(kube, "small"))
    assert "ResourceClaim too-big" in event["message"]
    assert (await get_claim(kube, "fits")).get("status", {}) == {}


async def test_a_pod_naming_a_missing_claim_waits_with_an_event(kube: KubeClient) -> None:
    await create_pod(kube, "early", [{"name": "gpu", "resourceClaimName": "later"}], node=NODE)
    async with ControlPlane(kube):
        (event,) = await eventually(lambda: pod_events(kube, "early"))
        await cluster(kube, device("device-0"))
        await create_claim(kube, "later", [request("gpu", "gpu")])
        assert await eventually(lambda: allocated(kube, "later"))
    assert event["message"] == "waiting for ResourceClaim default/later to be created"
