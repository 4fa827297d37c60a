"""NodePrepareResources / NodeUnprepareResources against claims in the API server."""

from __future__ import annotations

import asyncio
import json

import grpc
import pytest
from driver_support import (
    NAMESPACE,
    Env,
    claim_ref,
    create_claim,
    create_device_class,
    opaque,
    prepare,
    unique,
    unprepare,
)

from kubelet_dra.peers.api import dra_v1_pb2 as v1
from kubelet_dra.peers.api.services import DRA_V1BETA1
from kubelet_dra.peers.driver.claims import FROM_CLAIM, ClaimFailed, OpaqueConfig
from kubelet_dra.peers.driver.configfile import DriverConfig
from kubelet_dra.peers.kube.client import KubeClient


def cdi_env(env: Env, claim: dict, device: str = "device-0") -> list[str]:
    """The environment the claim's CDI spec gives ``device``."""
    uid = claim["metadata"]["uid"]
    spec = json.loads((env.cdi_root / f"k8s.{env.driver}-device_{uid}.json").read_text())
    (entry,) = [d for d in spec["devices"] if d["name"] == f"{uid}-{device}"]
    return entry["containerEdits"]["env"]


async def test_prepare_returns_devices_with_cdi_ids_and_writes_cdi_specs(env: Env, kube: KubeClient) -> None:
    claim = await create_claim(kube, driver=env.driver, pool=env.node, devices=("device-0", "device-1"))
    uid = claim["metadata"]["uid"]
    async with env.driver_plugin() as plugin:
        response = await prepare(plugin.settings.service_socket, [claim_ref(claim)])
    assert list(response.claims) == [uid]
    result = response.claims[uid]
    assert result.error == ""
    kind = f"k8s.{env.driver}/device"
    assert [(d.pool_name, d.device_name, list(d.request_names)) for d in result.devices] == [
        (env.node, "device-0", ["req"]),
        (env.node, "device-1", ["req"]),
    ]
    assert list(result.devices[1].cdi_device_ids) == [f"{kind}=common", f"{kind}={uid}-device-1"]
    assert not result.devices[0].HasField("share_id")
    spec = json.loads((env.cdi_root / f"k8s.{env.driver}-device_{uid}.json").read_text())
    assert spec["cdiVersion"].startswith("0.") and spec["kind"] == kind
    assert [d["name"] for d in spec["devices"]] == [f"{uid}-device-0", f"{uid}-device-1"]
    assert f"DRA_DEVICE_DEVICE_1_RESOURCE_CLAIM={uid}" in cdi_env(env, claim, "device-1")
    assert "DRA_ADMIN_ACCESS=false" in cdi_env(env, claim)
    common = json.loads((env.cdi_root / f"k8s.{env.driver}-device_common.json").read_text())
    assert common["devices"] == [
        {
            "name": "common",
            "containerEdits": {"env": [f"KUBERNETES_NODE_NAME={env.node}", f"DRA_RESOURCE_DRIVER_NAME={env.driver}"]},
        }
    ]


async def test_prepare_is_idempotent_and_recreates_a_lost_cdi_spec(env: Env, kube: KubeClient) -> None:
    claim = await create_claim(kube, driver=env.driver, pool=env.node)
    async with env.driver_plugin() as plugin:
        first = await prepare(plugin.settings.service_socket, [claim_ref(claim)])
        spec = env.cdi_root / f"k8s.{env.driver}-device_{claim['metadata']['uid']}.json"
        spec.unlink()
        second = await prepare(plugin.settings.service_socket, [claim_ref(claim)])
    assert first == second
    assert spec.exists()


async def test_v1beta1_service_answers_the_same(env: Env, kube: KubeClient) -> None:
    claim = await create_claim(kube, driver=env.driver, pool=env.node)
    async with env.driver_plugin() as plugin:
        response = await prepare(plugin.settings.service_socket, [claim_ref(claim)], service=DRA_V1BETA1)
        devices = response.claims[claim["metadata"]["uid"]].devices
        assert [d.device_name for d in devices] == ["device-0"]
        done = await unprepare(plugin.settings.service_socket, [claim_ref(claim)], service=DRA_V1BETA1)
    assert done.claims[claim["metadata"]["uid"]].error == ""


async def test_empty_request_answers_an_empty_map(env: Env) -> None:
    async with env.driver_plugin() as plugin:
        response = await prepare(plugin.settings.service_socket, [])
    assert response == v1.NodePrepareResourcesResponse()


@pytest.mark.parametrize("problem", ["missing", "not allocated", "replaced"])
async def test_unusable_claims_fail_the_whole_call_with_the_helpers_message(
    env: Env, kube: KubeClient, problem: str
) -> None:
    good = await create_claim(kube, driver=env.driver, pool=env.node)
    if problem == "missing":
        ref = v1.Claim(namespace=NAMESPACE, name="no-such-claim", uid="1234")
        expected = (
            "get resource claims: retrieve claim default/no-such-claim:"
            ' resourceclaims.resource.k8s.io "no-such-claim" not found'
        )
    elif problem == "not allocated":
        ref = claim_ref(await create_claim(kube, driver=env.driver, pool=env.node, allocate=False))
        expected = f"get resource claims: claim default/{ref.name} not allocated"
    else:
        ref = claim_ref(await create_claim(kube, driver=env.driver, pool=env.node))
        ref.uid = "an-older-uid"
        expected = f"get resource claims: claim default/{ref.name} got replaced"
    async with env.driver_plugin() as plugin:
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await prepare(plugin.settings.service_socket, [claim_ref(good), ref])
        assert plugin.preparer.prepared == {}
    assert caught.value.code() == grpc.StatusCode.UNKNOWN
    assert caught.value.details() == expected


async def test_only_this_drivers_results_are_returned(env: Env, kube: KubeClient) -> None:
    mixed = await create_claim(kube, driver=env.driver, pool=env.node, other_driver_results=2)
    foreign = await create_claim(kube, driver="other.example.com", pool=env.node)
    async with env.driver_plugin() as plugin:
        response = await prepare(plugin.settings.service_socket, [claim_ref(mixed), claim_ref(foreign)])
    assert [d.device_name for d in response.claims[mixed["metadata"]["uid"]].devices] == ["device-0"]
    assert response.claims[foreign["metadata"]["uid"]] == v1.NodePrepareResourceResponse()


async def test_a_device_this_node_lacks_fails_only_that_claim(env: Env, kube: KubeClient) -> None:
    good = await create_claim(kube, driver=env.driver, pool=env.node)
    bad = await create_claim(kube, driver=env.driver, pool=env.node, devices=("device-99",))
    async with env.driver_plugin() as plugin:
        response = await prepare(plugin.settings.service_socket, [claim_ref(good), claim_ref(bad)])
    assert response.claims[good["metadata"]["uid"]].error == ""
    assert response.claims[bad["metadata"]["uid"]].error == f"requested device is not allocatable: {env.node}/device-99"


async def test_unprepare_removes_the_cdi_spec_and_accepts_unknown_claims(env: Env, kube: KubeClient) -> None:
    claim = await create_claim(kube, driver=env.driver, pool=env.node)
    unknown = v1.Claim(namespace=NAMESPACE, name="never-prepared", uid="5678")
    spec = env.cdi_root / f"k8s.{env.driver}-device_{claim['metadata']['uid']}.json"
    async with env.driver_plugin() as plugin:
        await prepare(plugin.settings.service_socket, [claim_ref(claim)])
        assert spec.exists()
        response = await unprepare(plugin.settings.service_socket, [claim_ref(claim), unknown])
        again = await unprepare(plugin.settings.service_socket, [claim_ref(claim)])
        assert plugin.preparer.prepared == {}
    assert dict(response.claims) == {
        claim["metadata"]["uid"]: v1.NodeUnprepareResourceResponse(),
        "5678": v1.NodeUnprepareResourceResponse(),
    }
    assert again.claims[claim["metadata"]["uid"]].error == ""
    assert not spec.exists()


async def test_opaque_parameters_become_user_and_admin_environment(env: Env, kube: KubeClient) -> None:
    device_class = unique("class")
    await create_device_class(kube, device_class, [opaque(env.driver, {"mode": "fast", "level": 3})])
    claim = await create_claim(
        kube,
        driver=env.driver,
        pool=env.node,
        device_class=device_class,
        requests=("req", "other-request"),
        config=[
            opaque(env.driver, {"mode": "slow", "user": "alice"}),
            opaque("other.example.com", {"ignored": "yes"}),
            opaque(env.driver, {"elsewhere": "no"}, requests=["other-request"]),
        ],
    )
    async with env.driver_plugin() as plugin:
        await prepare(plugin.settings.service_socket, [claim_ref(claim)])
    variables = cdi_env(env, claim)
    assert variables[-4:] == ["admin_mode=fast", "admin_level=3", "user_mode=slow", "user_user=alice"]
    assert not any("ignored" in v or "elsewhere" in v for v in variables)


async def test_configuration_recorded_in_the_allocation_wins(env: Env, kube: KubeClient) -> None:
    recorded = [
        {"source": "FromClass", **opaque(env.driver, {"tier": "gold"})},
        {"source": "FromClaim", "requests": ["req"], **opaque(env.driver, {"color": "blue"})},
    ]
    claim = await create_claim(
        kube,
        driver=env.driver,
        pool=env.node,
        device_class="not-looked-up",
        config=[opaque(env.driver, {"spec": "not-used"})],
        allocation_config=recorded,
    )
    async with env.driver_plugin() as plugin:
        await prepare(plugin.settings.service_socket, [claim_ref(claim)])
    variables = cdi_env(env, claim)
    assert variables[-2:] == ["admin_tier=gold", "user_color=blue"]


def test_parameters_that_are_not_an_object_fail_the_claim() -> None:
    """A validating API server never lets this through; other sources of allocations might."""
    with pytest.raises(ClaimFailed, match="must be a JSON object"):
        OpaqueConfig(FROM_CLAIM, (), ["a", "list"]).env()


async def test_exclusive_devices_serve_one_claim_at_a_time(env: Env, kube: KubeClient) -> None:
    first = await create_claim(kube, driver=env.driver, pool=env.node)
    second = await create_claim(kube, driver=env.driver, pool=env.node)
    admin = await create_claim(kube, driver=env.driver, pool=env.node, admin_access=True)
    async with env.driver_plugin() as plugin:
        socket = plugin.settings.service_socket
        await prepare(socket, [claim_ref(first)])
        response = await prepare(socket, [claim_ref(second), claim_ref(admin)])
        assert "already in use by claim default/" + first["metadata"]["name"] in (
            response.claims[second["metadata"]["uid"]].error
        )
        assert response.claims[admin["metadata"]["uid"]].error == ""
        assert "DRA_ADMIN_ACCESS=true" in cdi_env(env, admin)
        await unprepare(socket, [claim_ref(first)])
        retried = await prepare(socket, [claim_ref(second)])
    assert retried.claims[second["metadata"]["uid"]].error == ""


async def test_shared_devices_serve_many_claims(env: Env, kube: KubeClient) -> None:
    claims = [await create_claim(kube, driver=env.driver, pool=env.node) for _ in range(2)]
    async with env.driver_plugin(config=DriverConfig(sharing="shared")) as plugin:
        response = await prepare(plugin.settings.service_socket, [claim_ref(c) for c in claims])
    assert all(result.error == "" for result in response.claims.values())


async def test_allocation_limit_per_node(env: Env, kube: KubeClient) -> None:
    claims = [await create_claim(kube, driver=env.driver, pool=env.node, devices=(f"device-{i}",)) for i in range(3)]
    async with env.driver_plugin(config=DriverConfig(max_allocations=2)) as plugin:
        response = await prepare(plugin.settings.service_socket, [claim_ref(c) for c in claims])
    errors = [response.claims[c["metadata"]["uid"]].error for c in claims]
    assert errors[:2] == ["", ""]
    assert errors[2] == f"node {env.node} already has the maximum of 2 prepared claims"


async def test_concurrent_calls_all_succeed(env: Env, kube: KubeClient) -> None:
    claims = [await create_claim(kube, driver=env.driver, pool=env.node, devices=(f"device-{i}",)) for i in range(4)]
    async with env.driver_plugin() as plugin:
        socket = plugin.settings.service_socket
        responses = await asyncio.gather(*(prepare(socket, [claim_ref(c)]) for c in claims))
        assert sorted(plugin.preparer.prepared) == sorted(c["metadata"]["uid"] for c in claims)
        undone = await asyncio.gather(*(unprepare(socket, [claim_ref(c)]) for c in claims))
    assert all(r.error == "" for response in responses for r in response.claims.values())
    assert all(r.error == "" for response in undone for r in response.claims.values())


async def test_no_op_answers_at_once_without_reading_claims_or_writing_cdi_specs(env: Env) -> None:
    claims = [v1.Claim(namespace=NAMESPACE, uid=unique("uid"), name=unique("absent")) for _ in range(2)]
    async with env.driver_plugin(no_op=True) as plugin:
        prepared = await prepare(plugin.settings.service_socket, claims)
        unprepared = await unprepare(plugin.settings.service_socket, claims)
    assert {uid: (list(r.devices), r.error) for uid, r in prepared.claims.items()} == {c.uid: ([], "") for c in claims}
    assert {uid: r.error for uid, r in unprepared.claims.items()} == {c.uid: "" for c in claims}
    assert not list(env.cdi_root.glob("*.json"))
