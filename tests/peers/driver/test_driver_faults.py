"""Every fault knob, flipped at run time through the control channel, breaks what it says it breaks.

Each case shows the symptom a kubelet (or a conformance check) would see; a knob added to
``KNOBS`` without a case here fails ``test_every_knob_has_a_case``.
"""

from __future__ import annotations

import asyncio
import stat
from collections.abc import Awaitable, Callable
from typing import Any

import grpc
import pytest
from driver_support import (
    REPUBLISH_DELAY,
    RESOURCE,
    Env,
    channel,
    claim_ref,
    create_claim,
    get_info,
    list_slices,
    notify,
    prepare,
    unprepare,
    wait_slices,
)

from kubelet_dra.peers.api import dra_v1_pb2 as v1
from kubelet_dra.peers.api.services import (
    DRA_HEALTH_V1,
    DRA_HEALTH_V1ALPHA1,
    DRA_V1,
    DRA_V1ALPHA4,
    DRA_V1BETA1,
    EMPTY_SERVICES_ERROR,
    Service,
    negotiate,
)
from kubelet_dra.peers.driver import control
from kubelet_dra.peers.driver.knobs import HEALTH_ADVERTISE_CHOICES, KNOBS, VERSION_CHOICES
from kubelet_dra.peers.driver.plugin import DriverPlugin
from kubelet_dra.peers.errors import DriverError
from kubelet_dra.peers.kube.client import KubeClient, api_path

Case = Callable[[Env, KubeClient, DriverPlugin], Awaitable[None]]
CASES: dict[str, Case] = {}


def case(name: str) -> Callable[[Case], Case]:
    def register(function: Case) -> Case:
        CASES[name] = function
        return function

    return register


async def set_knobs(plugin: DriverPlugin, **knobs: str) -> None:
    values = {name.replace("_", "-"): value for name, value in knobs.items()}
    await control.request(plugin.settings.control_socket, {"op": "set", "knobs": values})


async def clear_knobs(plugin: DriverPlugin) -> None:
    await control.request(plugin.settings.control_socket, {"op": "clear"})


async def rpc_error(call: Awaitable[Any]) -> grpc.aio.AioRpcError:
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value


async def empty_prepare(plugin: DriverPlugin, service: Service) -> Any:
    async with channel(plugin.settings.service_socket) as opened:
        request = service.message_class("NodePrepareResourcesRequest")()
        return await service.stub(opened).NodePrepareResources(request, timeout=5)


@case("getinfo-error")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    await set_knobs(plugin, getinfo_error="plugin not ready")
    error = await rpc_error(get_info(plugin.settings.registration_socket))
    assert (error.code(), error.details()) == (grpc.StatusCode.UNKNOWN, "plugin not ready")
    await clear_knobs(plugin)
    assert (await get_info(plugin.settings.registration_socket)).name == env.driver


@case("getinfo-delay")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    await set_knobs(plugin, getinfo_delay="1.3s")
    error = await rpc_error(get_info(plugin.settings.registration_socket, timeout=1.0))
    assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED


@case("getinfo-type")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    await set_knobs(plugin, getinfo_type="CSIPlugin")
    assert (await get_info(plugin.settings.registration_socket)).type == "CSIPlugin"


@case("getinfo-endpoint")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    await set_knobs(plugin, getinfo_endpoint="dra.sock")
    assert (await get_info(plugin.settings.registration_socket)).endpoint == "dra.sock"


@case("health-advertise")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    """Each value changes what GetInfo advertises; both health services are served whatever is advertised."""
    expected = {
        "both": ["v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"],
        "v1": ["v1.DRAResourceHealth"],
        "v1alpha1": ["v1alpha1.DRAResourceHealth"],
        "none": [],
    }
    assert set(expected) == set(HEALTH_ADVERTISE_CHOICES)
    async with env.driver_plugin(driver="health.example.com", health=True, devices=1) as healthy:
        for value, advertised in expected.items():
            await set_knobs(healthy, health_advertise=value)
            info = await get_info(healthy.settings.registration_socket)
            assert list(info.supported_versions) == ["v1.DRAPlugin", "v1beta1.DRAPlugin", *advertised], value
            for service in (DRA_HEALTH_V1, DRA_HEALTH_V1ALPHA1):
                async with channel(healthy.settings.service_socket) as opened:
                    call = service.stub(opened).NodeWatchResources(service.message_class("NodeWatchResourcesRequest")())
                    first = await asyncio.wait_for(call.read(), 5)
                    assert [d.device.device_name for d in first.devices] == ["device-0"], (value, service.advertised)
                    call.cancel()


@case("versions")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    """Each value changes both what GetInfo advertises and what the service socket answers."""
    expected: dict[str, tuple[list[str], tuple[Service, ...]]] = {
        "all": (["v1.DRAPlugin", "v1beta1.DRAPlugin"], (DRA_V1, DRA_V1BETA1)),
        "v1": (["v1.DRAPlugin"], (DRA_V1,)),
        "v1beta1": (["v1beta1.DRAPlugin"], (DRA_V1BETA1,)),
        "v1alpha4": (["v1alpha3.NodeService"], (DRA_V1ALPHA4,)),
        "1.0.0": (["1.0.0"], (DRA_V1ALPHA4,)),
        "none": ([], (DRA_V1, DRA_V1BETA1)),
    }
    assert set(expected) == set(VERSION_CHOICES)
    for value, (advertised, served) in expected.items():
        await set_knobs(plugin, versions=value)
        info = await get_info(plugin.settings.registration_socket)
        assert list(info.supported_versions) == advertised, value
        for service in (DRA_V1, DRA_V1BETA1, DRA_V1ALPHA4):
            if service in served:
                assert await empty_prepare(plugin, service) == service.message_class("NodePrepareResourcesResponse")()
            else:
                assert (await rpc_error(empty_prepare(plugin, service))).code() == grpc.StatusCode.UNIMPLEMENTED
        if value in ("v1alpha4", "1.0.0", "none"):
            with pytest.raises(DriverError) as rejected:
                negotiate(info.supported_versions)
            assert (rejected.value.what == EMPTY_SERVICES_ERROR) == (value == "none")
        if value in ("v1alpha4", "1.0.0"):
            assert negotiate(info.supported_versions, legacy=True) is DRA_V1ALPHA4


@case("notify-error")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    await set_knobs(plugin, notify_error="cannot accept")
    error = await rpc_error(notify(plugin.settings.registration_socket, True))
    assert (error.code(), error.details()) == (grpc.StatusCode.UNKNOWN, "cannot accept")


@case("serve-advertised-name")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    await set_knobs(plugin, serve_advertised_name="true")
    assert (await rpc_error(empty_prepare(plugin, DRA_V1))).code() == grpc.StatusCode.UNIMPLEMENTED
    async with channel(plugin.settings.service_socket) as opened:
        call = opened.unary_unary(
            "/v1.DRAPlugin/NodePrepareResources",
            request_serializer=v1.NodePrepareResourcesRequest.SerializeToString,
            response_deserializer=v1.NodePrepareResourcesResponse.FromString,
        )
        assert await call(v1.NodePrepareResourcesRequest(), timeout=5) == v1.NodePrepareResourcesResponse()


@case("prepare-block")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    claim = await create_claim(kube, driver=env.driver, pool=env.node)
    await set_knobs(plugin, prepare_block="true")
    error = await rpc_error(prepare(plugin.settings.service_socket, [claim_ref(claim)], timeout=0.3))
    assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    blocked = asyncio.create_task(prepare(plugin.settings.service_socket, [claim_ref(claim)]))
    await asyncio.sleep(0.2)
    assert not blocked.done()
    await clear_knobs(plugin)
    assert (await blocked).claims[claim["metadata"]["uid"]].error == ""


@case("prepare-delay")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    await set_knobs(plugin, prepare_delay="500ms")
    error = await rpc_error(prepare(plugin.settings.service_socket, [], timeout=0.2))
    assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED


@case("prepare-error")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    claim = await create_claim(kube, driver=env.driver, pool=env.node)
    await set_knobs(plugin, prepare_error="device on fire")
    error = await rpc_error(prepare(plugin.settings.service_socket, [claim_ref(claim)]))
    assert (error.code(), error.details()) == (grpc.StatusCode.UNKNOWN, "prepare resource claims: device on fire")


@case("prepare-fail-claim")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    failing, fine = [
        await create_claim(kube, driver=env.driver, pool=env.node, devices=(d,)) for d in ("device-0", "device-1")
    ]
    await set_knobs(plugin, prepare_fail_claim=failing["metadata"]["name"])
    response = await prepare(plugin.settings.service_socket, [claim_ref(failing), claim_ref(fine)])
    assert "injected failure" in response.claims[failing["metadata"]["uid"]].error
    assert response.claims[fine["metadata"]["uid"]].error == ""


@case("prepare-omit-claim")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    omitted, kept = [
        await create_claim(kube, driver=env.driver, pool=env.node, devices=(d,)) for d in ("device-0", "device-1")
    ]
    await set_knobs(plugin, prepare_omit_claim=omitted["metadata"]["uid"])
    response = await prepare(plugin.settings.service_socket, [claim_ref(omitted), claim_ref(kept)])
    assert list(response.claims) == [kept["metadata"]["uid"]]


@case("prepare-unknown-key")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    claim = await create_claim(kube, driver=env.driver, pool=env.node)
    await set_knobs(plugin, prepare_unknown_key="true")
    response = await prepare(plugin.settings.service_socket, [claim_ref(claim)])
    assert len(response.claims) == 2 and claim["metadata"]["uid"] in response.claims


async def prepared_or_refused(env: Env, kube: KubeClient, plugin: DriverPlugin, **claim: Any) -> str:
    """The per-claim error of one claim on ``env``'s pool ("" when prepared)."""
    made = await create_claim(kube, driver=env.driver, pool=env.node, **claim)
    response = await prepare(plugin.settings.service_socket, [claim_ref(made)])
    await unprepare(plugin.settings.service_socket, [claim_ref(made)])
    return response.claims[made["metadata"]["uid"]].error


@case("require-all-devices")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    """A claim for one of the two devices is refused in the driver's words; one for both is prepared."""
    await set_knobs(plugin, require_all_devices="true")
    error = await prepared_or_refused(env, kube, plugin, devices=("device-0",))
    assert "requests part of the" in error and "devices (1), only requests for all of its devices (2)" in error
    assert await prepared_or_refused(env, kube, plugin, devices=("device-0", "device-1")) == ""


@case("require-count")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    await set_knobs(plugin, require_count="2")
    error = await prepared_or_refused(env, kube, plugin, devices=("device-1",))
    assert error.endswith(f"1 device(s) allocated, {env.driver} prepares exactly 2"), error
    assert await prepared_or_refused(env, kube, plugin, devices=("device-0", "device-1")) == ""


@case("require-config")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    """Only a claim with an opaque config of the driver whose parameters have the knob's kind is prepared."""
    await set_knobs(plugin, require_config="GpuConfig")
    error = await prepared_or_refused(env, kube, plugin)
    assert f"no opaque config of kind 'GpuConfig' for driver {env.driver}" in error, error
    other = [{"opaque": {"driver": env.driver, "parameters": {"kind": "NetConfig"}}}]
    assert "no opaque config" in await prepared_or_refused(env, kube, plugin, config=other)
    typed = [{"opaque": {"driver": env.driver, "parameters": {"kind": "GpuConfig", "sharing": "none"}}}]
    assert await prepared_or_refused(env, kube, plugin, config=typed) == ""


@case("cdi-unqualified")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    claim = await create_claim(kube, driver=env.driver, pool=env.node)
    await set_knobs(plugin, cdi_unqualified="true")
    response = await prepare(plugin.settings.service_socket, [claim_ref(claim)])
    uid = claim["metadata"]["uid"]
    assert list(response.claims[uid].devices[0].cdi_device_ids) == ["common", f"{uid}-device-0"]


@case("cdi-skip-write")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    claim = await create_claim(kube, driver=env.driver, pool=env.node)
    await set_knobs(plugin, cdi_skip_write="true")
    response = await prepare(plugin.settings.service_socket, [claim_ref(claim)])
    assert response.claims[claim["metadata"]["uid"]].devices
    assert not env.cdi_root.exists() or not any(env.cdi_root.iterdir())


@case("unprepare-error")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    await set_knobs(plugin, unprepare_error="stuck device")
    claim = v1.Claim(namespace="default", name="c", uid="u")
    error = await rpc_error(unprepare(plugin.settings.service_socket, [claim]))
    assert (error.code(), error.details()) == (grpc.StatusCode.UNKNOWN, "unprepare resource claims: stuck device")


@case("unprepare-block")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    await set_knobs(plugin, unprepare_block="true")
    claim = v1.Claim(namespace="default", name="c", uid="u")
    error = await rpc_error(unprepare(plugin.settings.service_socket, [claim], timeout=0.3))
    assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED


@case("no-republish")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    (published,) = await wait_slices(kube, env.driver)
    await set_knobs(plugin, no_republish="true")
    await kube.request("DELETE", api_path(RESOURCE, "v1", "resourceslices", name=published["metadata"]["name"]))
    await asyncio.sleep(REPUBLISH_DELAY * 5)
    assert await list_slices(kube, env.driver) == []
    await clear_knobs(plugin)
    assert len(await wait_slices(kube, env.driver)) == 1


@case("slices-node")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    await wait_slices(kube, env.driver)
    await set_knobs(plugin, slices_node="someone-else")
    for _ in range(100):
        published = await list_slices(kube, env.driver)
        if [s["spec"]["nodeName"] for s in published] == ["someone-else"]:
            break
        await asyncio.sleep(0.05)
    assert [(s["spec"]["nodeName"], s["spec"]["pool"]["name"]) for s in published] == [("someone-else",) * 2]


@case("exit-after-registration")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    await set_knobs(plugin, exit_after_registration="true")
    await notify(plugin.settings.registration_socket, True)
    await asyncio.wait_for(plugin.wait(), 5)


@case("leave-sockets")
async def _(env: Env, kube: KubeClient, plugin: DriverPlugin) -> None:
    await set_knobs(plugin, leave_sockets="true")
    await plugin.stop()
    socket = plugin.settings.registration_socket
    assert stat.S_ISSOCK(socket.stat().st_mode)
    assert stat.S_ISSOCK(plugin.settings.service_socket.stat().st_mode)
    assert (await rpc_error(get_info(socket))).code() == grpc.StatusCode.UNAVAILABLE


def test_every_knob_has_a_case() -> None:
    assert sorted(CASES) == sorted(knob.name for knob in KNOBS)


@pytest.mark.parametrize("knob", sorted(CASES))
async def test_fault_knob(env: Env, kube: KubeClient, knob: str) -> None:
    async with env.driver_plugin(devices=2) as plugin:
        await CASES[knob](env, kube, plugin)
