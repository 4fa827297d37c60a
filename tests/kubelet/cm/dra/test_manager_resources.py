"""CDI device IDs per container, the reconcile of pods that are gone, and pods using several drivers."""

from __future__ import annotations

import asyncio

import pytest
from nodeenv import GPU, NIC, NodeEnv

from kubelet_dra.kubelet.cm.dra import ClaimError

PREPARE = "NodePrepareResources"
UNPREPARE = "NodeUnprepareResources"


def uid(obj: dict) -> str:
    return obj["metadata"]["uid"]


def name(obj: dict) -> str:
    return obj["metadata"]["name"]


def container(container_name: str, claims: list[dict] | None = None, requests: dict | None = None) -> dict:
    resources: dict = {"claims": claims or []}
    if requests:
        resources["requests"] = requests
    return {"name": container_name, "image": "busybox", "resources": resources}


def cdi_ids(claim: dict, device: str) -> list[str]:
    """What the reference driver returns for one device: its common CDI device, then the claim's device."""
    return [f"k8s.{GPU}/device=common", f"k8s.{GPU}/device={uid(claim)}-{device}"]


async def test_each_container_gets_the_cdi_ids_of_the_requests_it_uses(env: NodeEnv) -> None:
    async with env.node() as node:
        await env.start_driver(node)
        manager = env.manager(node)
        pod = env.pod(
            containers=[
                container("all", [{"name": "gpus"}]),
                container("second", [{"name": "gpus", "request": "r2"}]),
                container("nothing"),
                container("extended", requests={"example.com/gpu": "1", "cpu": "1"}),
                container("extended-zero", requests={"example.com/gpu": "0"}),
            ]
        )
        claim = await env.claim([("r1", GPU, "device-0"), ("r2", GPU, "device-1")], reserved_for=[pod])
        extended = await env.claim([("container-3-request-0", GPU, "device-2")], reserved_for=[pod])
        pod["spec"]["resourceClaims"] = [{"name": "gpus", "resourceClaimName": name(claim)}]
        mappings = [
            {"containerName": c, "resourceName": "example.com/gpu", "requestName": "container-3-request-0"}
            for c in ("extended", "extended-zero")
        ]
        pod["status"]["extendedResourceClaimStatus"] = {
            "resourceClaimName": name(extended),
            "requestMappings": mappings,
        }

        with pytest.raises(ClaimError) as failure:
            manager.get_resources(pod, "all")
        assert str(failure.value) == (
            f"internal error: unable to get claim info for ResourceClaim {name(claim)} in namespace default"
        )

        await manager.prepare_resources(pod)
        [call] = env.calls(node, PREPARE)
        assert env.sent(call) == [uid(claim), uid(extended)]

        assert manager.get_resources(pod, "all") == cdi_ids(claim, "device-0") + cdi_ids(claim, "device-1")
        assert manager.get_resources(pod, "second") == cdi_ids(claim, "device-1")
        assert manager.get_resources(pod, "nothing") == []
        assert manager.get_resources(pod, "extended") == cdi_ids(extended, "device-2")
        assert manager.get_resources(pod, "extended-zero") == []

        # What a ≤1.30 kubelet also put on the container: one annotation per driver and claim.
        assert manager.cdi_annotations(pod, "second") == {
            f"cdi.k8s.io/{GPU}_{uid(claim)}": ",".join(cdi_ids(claim, "device-1"))
        }
        assert manager.cdi_annotations(pod, "nothing") == {}


async def test_reconcile_unprepares_for_pods_that_are_gone_and_retries_failures(env: NodeEnv) -> None:
    async with env.node() as node:
        driver = await env.start_driver(node)
        manager = env.manager(node)
        staying, gone = env.pod(), env.pod()
        kept = await env.claim([("gpu", GPU, "device-0")], reserved_for=[staying])
        freed = await env.claim([("gpu", GPU, "device-1")], reserved_for=[gone])
        staying["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name(kept)}]
        gone["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name(freed)}]
        await manager.prepare_resources(staying)
        await manager.prepare_resources(gone)

        assert await manager.reconcile({uid(staying)}) == {}
        [call] = env.calls(node, UNPREPARE)
        assert env.sent(call) == [uid(freed)]
        assert [state.claim_name for state in env.checkpoint.load()] == [name(kept)]
        assert await manager.reconcile({uid(staying)}) == {}
        assert len(env.calls(node, UNPREPARE)) == 1

        await driver.fault("set", "unprepare-error=device busy")
        failed = await manager.reconcile(set())
        assert list(failed) == [uid(staying)]
        assert failed[uid(staying)].startswith("NodeUnprepareResources: rpc error: code = ")
        assert failed[uid(staying)].endswith("device busy")
        assert [state.claim_name for state in env.checkpoint.load()] == [name(kept)]

        await driver.fault("clear", "unprepare-error")
        assert await manager.reconcile(set()) == {}
        assert env.checkpoint.load() == []


async def test_one_pod_with_two_drivers_makes_one_call_per_driver(env: NodeEnv) -> None:
    async with env.node() as node:
        await env.start_driver(node, GPU)
        await env.start_driver(node, NIC)
        manager = env.manager(node)
        pod = env.pod()
        gpu = await env.claim([("gpu", GPU, "device-0")], reserved_for=[pod])
        nic = await env.claim([("nic", NIC, "device-0")], reserved_for=[pod])
        both = await env.claim([("gpu", GPU, "device-1"), ("nic", NIC, "device-1")], reserved_for=[pod])
        pod["spec"]["resourceClaims"] = [
            {"name": "gpu", "resourceClaimName": name(gpu)},
            {"name": "nic", "resourceClaimName": name(nic)},
            {"name": "both", "resourceClaimName": name(both)},
        ]

        await manager.prepare_resources(pod)
        [gpu_call] = env.calls(node, PREPARE, GPU)
        [nic_call] = env.calls(node, PREPARE, NIC)
        assert env.sent(gpu_call) == [uid(gpu), uid(both)]
        assert env.sent(nic_call) == [uid(nic), uid(both)]
        stored = {state.claim_name: state for state in env.checkpoint.load()}
        assert {
            driver: [d.device_name for d in devices] for driver, devices in stored[name(both)].driver_state.items()
        } == {
            GPU: ["device-1"],
            NIC: ["device-1"],
        }

        await manager.unprepare_resources(pod)
        [gpu_call] = env.calls(node, UNPREPARE, GPU)
        [nic_call] = env.calls(node, UNPREPARE, NIC)
        assert env.sent(gpu_call) == [uid(gpu), uid(both)]
        assert env.sent(nic_call) == [uid(nic), uid(both)]
        assert env.checkpoint.load() == []


async def test_the_reconcile_loop_runs_every_period(env: NodeEnv) -> None:
    slept: asyncio.Queue[float] = asyncio.Queue()
    wake: asyncio.Queue[None] = asyncio.Queue()

    async def sleep(seconds: float) -> None:
        await slept.put(seconds)
        await wake.get()

    async with env.node() as node:
        await env.start_driver(node)
        manager = env.manager(node, reconcile_period=7.0, sleep=sleep)
        gone = env.pod()
        claim = await env.claim(reserved_for=[gone])
        gone["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimName": name(claim)}]
        await manager.prepare_resources(gone)

        loop = asyncio.create_task(manager.reconcile_loop(lambda: {uid(env.pod())}))
        try:
            assert await asyncio.wait_for(slept.get(), 10) == 7.0
            assert env.calls(node, UNPREPARE) == []
            await wake.put(None)
            assert await asyncio.wait_for(slept.get(), 10) == 7.0  # one round done, sleeping again
            [call] = env.calls(node, UNPREPARE)
            assert env.sent(call) == [uid(claim)]
        finally:
            loop.cancel()
            await asyncio.wait([loop])
