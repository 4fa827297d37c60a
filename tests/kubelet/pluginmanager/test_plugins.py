"""The DRA plugin manager through a standalone Node: instances, service negotiation, calls, connections, health."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from kubelet_dra.kubelet.cm.dra.plugin import DriverNotRegistered, Health, PluginMap
from kubelet_dra.kubelet.kubelet import Node
from kubelet_dra.kubelet.pluginmanager import SocketPhase
from kubelet_dra.kubelet.release import V1_36, V1_37
from kubelet_dra.peers.api import dra_health_v1alpha1_pb2 as health_pb2
from kubelet_dra.peers.api import dra_v1_pb2

from .support import FakeClock, TinyDriver

DriverFactory = Callable[..., TinyDriver]

CLAIM = dra_v1_pb2.Claim(namespace="default", uid="uid-1", name="claim-1")


def count(node: Node, name: str, n: int) -> Callable[[], bool]:
    """``n`` instances of the driver and no handshake still in progress."""
    return lambda: (
        len(node.instances(name)) == n
        and all(state.phase is not SocketPhase.IN_PROGRESS for state in node.registrations())
    )


def connected(node: Node, name: str) -> Callable[[], bool]:
    """A connected instance of the driver and no handshake still in progress."""
    return lambda: (
        any(i.connected for i in node.instances(name))
        and all(state.phase is not SocketPhase.IN_PROGRESS for state in node.registrations())
    )


async def test_rolling_update_keeps_two_instances_and_prefers_the_newest_connected(node_factory, make_driver):
    old = make_driver(socket_name="gpu-old-reg.sock", plugin_dir="old")
    new = make_driver(socket_name="gpu-new-reg.sock", plugin_dir="new")
    async with node_factory() as node:
        await old.start()
        await node.wait_for(connected(node, old.name))
        await new.start()
        await node.wait_for(lambda: all(i.connected for i in node.instances(new.name)) and count(node, new.name, 2)())
        assert [i.endpoint for i in node.instances(new.name)] == [str(old.service_socket), str(new.service_socket)]
        assert node.plugins.get_plugin(new.name).endpoint == str(new.service_socket)

        await old.stop()
        await node.wait_for(count(node, new.name, 1))
        assert node.plugins.get_plugin(new.name).endpoint == str(new.service_socket)


async def test_disconnected_newest_instance_is_skipped(node_factory, make_driver):
    old = make_driver(socket_name="a-reg.sock", plugin_dir="old")
    new = make_driver(socket_name="b-reg.sock", plugin_dir="new", serves=())
    async with node_factory() as node:
        await old.start()
        await node.wait_for(connected(node, old.name))
        await new.start_registration()  # nobody serves the new endpoint
        await node.wait_for(count(node, old.name, 2))
        assert node.plugins.get_plugin(old.name).endpoint == str(old.service_socket)


async def test_lookup_errors_use_the_kubelet_texts(node_factory):
    async with node_factory() as node:
        with pytest.raises(DriverNotRegistered, match=r"^DRA driver name is empty$"):
            node.plugins.get_plugin("")
        with pytest.raises(DriverNotRegistered, match=r"^DRA driver gpu\.example\.com is not registered$"):
            node.plugins.get_plugin("gpu.example.com")


async def test_replace_semantics_forget_the_old_instance_and_deregister_by_name(node_factory, make_driver, caplog):
    old = make_driver(socket_name="a-reg.sock", plugin_dir="old")
    new = make_driver(socket_name="b-reg.sock", plugin_dir="new")
    async with node_factory(plugin_map=PluginMap.REPLACE) as node:
        await old.start()
        await node.wait_for(count(node, old.name, 1))
        with caplog.at_level(logging.INFO, logger="kubelet_dra"):
            await new.start()
            await node.wait_for(lambda: [i.endpoint for i in node.instances(new.name)] == [str(new.service_socket)])
        assert any(
            "the old plugin was replaced and will be forgotten" in record.getMessage() for record in caplog.records
        )
        await old.stop()  # a ≤1.32 kubelet deregisters by name: the new instance goes too
        await node.wait_for(count(node, new.name, 0))


@pytest.mark.parametrize(
    ("versions", "serves", "chosen", "wire"),
    [
        (["v1.DRAPlugin"], ["v1"], "v1.DRAPlugin", "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin"),
        (["v1beta1.DRAPlugin"], ["v1beta1"], "v1beta1.DRAPlugin", "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin"),
        (
            ["v1alpha1.DRAResourceHealth", "v1beta1.DRAPlugin", "v1.DRAPlugin"],
            ["v1", "v1beta1"],
            "v1beta1.DRAPlugin",
            "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin",
        ),
    ],
)
async def test_first_supported_service_in_plugin_order_is_used(
    node_factory, make_driver, versions, serves, chosen, wire
):
    driver = make_driver(versions=versions, serves=serves)
    async with node_factory() as node:
        await driver.start()
        await node.wait_for(count(node, driver.name, 1))
        assert node.chosen_services() == {(driver.name, str(driver.service_socket)): chosen}

        response = await node.plugins.get_plugin(driver.name).client.node_prepare_resources(
            dra_v1_pb2.NodePrepareResourcesRequest(claims=[CLAIM])
        )
        assert isinstance(response, dra_v1_pb2.NodePrepareResourcesResponse), "answers come back as v1"
        [device] = response.claims["uid-1"].devices
        assert (device.pool_name, device.device_name) == ("pool", "dev-uid-1")
        assert device.HasField("share_id") == (chosen == "v1.DRAPlugin"), "v1beta1 has no share_id"
        [record] = node.recorder.records(driver=driver.name, method="NodePrepareResources")
        assert record.method == f"/{wire}/NodePrepareResources"


async def test_legacy_driver_is_rejected_unless_legacy_services_are_on(node_factory, make_driver):
    driver = make_driver(versions=["1.0.0"], serves=["v1alpha4"])
    async with node_factory(legacy_services=True) as node:
        await driver.start()
        await node.wait_for(count(node, driver.name, 1))
        assert node.chosen_services() == {(driver.name, str(driver.service_socket)): "v1alpha3.NodeService"}
        client = node.plugins.get_plugin(driver.name).client
        response = await client.node_unprepare_resources(dra_v1_pb2.NodeUnprepareResourcesRequest(claims=[CLAIM]))
        assert list(response.claims) == ["uid-1"]
        assert node.recorder.records()[-1].method == "/v1alpha3.Node/NodeUnprepareResources"


async def test_legacy_validation_texts(node_factory, make_driver):
    driver = make_driver(versions=[])
    async with node_factory(legacy_services=True) as node:
        await driver.start()
        registered_ok, message = await driver.wait_for_status()
        assert not registered_ok
        assert message == (
            "RegisterPlugin error -- plugin validation failed with err: invalid versions of plugin tiny.example.com:"
            " empty list of supported gRPC services (aka supported versions)"
        )
        assert node.instances() == []


async def test_call_recorder_keeps_and_exports_every_call(node_factory, make_driver, tmp: Path):
    driver = make_driver(versions=["v1.DRAPlugin"], serves=["v1beta1"])  # advertises what it does not serve
    live = tmp / "calls.jsonl"
    async with node_factory(record_calls=str(live)) as node:
        await driver.start()
        await node.wait_for(connected(node, driver.name))
        client = node.plugins.get_plugin(driver.name).client
        with pytest.raises(grpc.aio.AioRpcError) as failure:
            await client.node_prepare_resources(dra_v1_pb2.NodePrepareResourcesRequest(claims=[CLAIM]))
        assert failure.value.code() is grpc.StatusCode.UNIMPLEMENTED

        driver.serves = ["v1"]
        await driver.stop()
        await driver.start()
        await node.wait_for(connected(node, driver.name))
        client = node.plugins.get_plugin(driver.name).client
        await client.node_prepare_resources(dra_v1_pb2.NodePrepareResourcesRequest(claims=[CLAIM]))

        failed, succeeded = node.recorder.records(method="NodePrepareResources")
        assert (failed.status, failed.response) == ("UNIMPLEMENTED", None)
        assert succeeded.status == "OK" and succeeded.request_id > failed.request_id
        assert succeeded.request == {"claims": [{"namespace": "default", "uid": "uid-1", "name": "claim-1"}]}
        assert succeeded.response["claims"]["uid-1"]["devices"][0]["device_name"] == "dev-uid-1"
        assert (succeeded.driver, succeeded.endpoint) == (driver.name, str(driver.service_socket))
        assert succeeded.duration >= 0

        exported = tmp / "export.jsonl"
        node.recorder.export_jsonl(exported)
        lines = [json.loads(line) for line in exported.read_text().splitlines()]
        assert [line["request_id"] for line in lines] == [r.request_id for r in node.recorder.records()]
        assert live.read_text() == exported.read_text()


async def test_a_node_that_keeps_its_last_calls_still_writes_every_call_to_the_file(
    node_factory, make_driver, tmp: Path
):
    driver = make_driver()
    live = tmp / "calls.jsonl"
    async with node_factory(record_calls=str(live), calls_kept=2) as node:
        await driver.start()
        await node.wait_for(connected(node, driver.name))
        client = node.plugins.get_plugin(driver.name).client
        for _ in range(3):
            await client.node_prepare_resources(dra_v1_pb2.NodePrepareResourcesRequest(claims=[CLAIM]))

        written = [json.loads(line) for line in live.read_text().splitlines()]
        kept = node.recorder.records()
        assert len(written) >= 5, "GetInfo, NotifyRegistrationStatus and three prepares, at least"
        assert [record.request_id for record in kept] == [line["request_id"] for line in written[-2:]]
        assert [record.method.rsplit("/", 1)[1] for record in kept] == ["NodePrepareResources"] * 2


async def test_connection_loss_and_reconnect_without_deregistration(node_factory, make_driver):
    driver = make_driver()
    async with node_factory() as node:
        await driver.start()
        await node.wait_for(connected(node, driver.name))
        service = driver._servers[0]
        await service.stop(None)  # the service dies, the registration socket stays
        await node.wait_for(lambda: not connected(node, driver.name)())
        assert len(node.instances(driver.name)) == 1
        driver._servers.remove(service)
        await driver.start_service()
        await node.wait_for(connected(node, driver.name), timeout=15)


async def test_a_call_whose_instance_is_unregistered_fails_like_in_go(node_factory, make_driver):
    """Deregistration closes the channel under a running call: the caller gets CANCELLED, not cancelled itself."""
    driver = make_driver(prepare_delay=30)
    async with node_factory() as node:
        await driver.start()
        await node.wait_for(connected(node, driver.name))
        client = node.plugins.get_plugin(driver.name).client
        request = dra_v1_pb2.NodePrepareResourcesRequest(claims=[CLAIM])
        call = asyncio.create_task(client.node_prepare_resources(request))
        await driver.until(lambda: driver.calls)
        driver.registration_socket.unlink()  # the node unregisters the driver and closes its connection

        with pytest.raises(grpc.aio.AioRpcError) as failure:
            await asyncio.wait_for(call, timeout=10)
        assert failure.value.code() is grpc.StatusCode.CANCELLED
        assert failure.value.details() == "grpc: the client connection is closing"
        (record,) = node.recorder.records(method="NodePrepareResources")
        assert (record.status, record.details) == ("CANCELLED", "grpc: the client connection is closing")
        assert node.instances(driver.name) == []


async def test_a_call_through_an_instance_unregistered_before_it_fails_like_in_go(node_factory, make_driver):
    """A caller that looked the instance up before it was unregistered gets CANCELLED too (the crash soak's pod
    worker died of grpc's own "Channel is closed." instead)."""
    driver = make_driver()
    async with node_factory() as node:
        await driver.start()
        await node.wait_for(connected(node, driver.name))
        instance = node.plugins.get_plugin(driver.name)
        driver.registration_socket.unlink()
        await node.wait_for(lambda: instance.channel.get_state() is grpc.ChannelConnectivity.SHUTDOWN)

        with pytest.raises(grpc.aio.AioRpcError) as failure:
            await instance.client.node_prepare_resources(dra_v1_pb2.NodePrepareResourcesRequest(claims=[CLAIM]))
        assert failure.value.code() is grpc.StatusCode.CANCELLED
        assert failure.value.details() == "grpc: the client connection is closing"
        (record,) = node.recorder.records(method="NodePrepareResources")
        assert (record.status, record.details) == ("CANCELLED", "grpc: the client connection is closing")


def report(*devices: tuple[str, int, int, str]) -> health_pb2.NodeWatchResourcesResponse:
    return health_pb2.NodeWatchResourcesResponse(
        devices=[
            health_pb2.DeviceHealth(
                device=health_pb2.DeviceIdentifier(pool_name="pool", device_name=name),
                health=status,
                health_check_timeout_seconds=timeout,
                message=message,
            )
            for name, status, timeout, message in devices
        ]
    )


async def test_health_transitions_staleness_and_stream_restart(node_factory, make_driver, clock: FakeClock):
    driver = make_driver(health=True)
    async with node_factory() as node:
        await driver.start()
        await driver.until(lambda: driver.health_streams == 1)

        def states() -> dict[str, tuple[Health, str]]:
            return {d.device_name: (d.health, d.message) for d in node.health.devices(driver.name)}

        await driver.health_reports.put(
            report(("gpu-0", health_pb2.HEALTHY, 0, ""), ("gpu-1", health_pb2.HEALTHY, 60, ""))
        )
        await node.wait_for(lambda: states() == {"gpu-0": (Health.HEALTHY, ""), "gpu-1": (Health.HEALTHY, "")})

        await driver.health_reports.put(report(("gpu-0", health_pb2.UNHEALTHY, 0, "x" * 2000)))
        await node.wait_for(lambda: states()["gpu-0"][0] is Health.UNHEALTHY)
        message = states()["gpu-0"][1]
        assert len(message) == 1024 and message.endswith("...")

        await clock.advance(31)  # default timeout 30 s passed; gpu-1 asked for 60 s
        assert states() == {"gpu-0": (Health.UNKNOWN, ""), "gpu-1": (Health.HEALTHY, "")}
        await driver.health_reports.put(report(("gpu-0", health_pb2.HEALTHY, 0, "")))
        await node.wait_for(lambda: states()["gpu-0"] == (Health.HEALTHY, ""))

        await driver.health_reports.put(None)  # the stream ends: the driver's health is forgotten
        await node.wait_for(lambda: states() == {})
        await clock.advance(4)
        assert driver.health_streams == 1
        await clock.advance(1)
        await driver.until(lambda: driver.health_streams == 2)


async def test_1_36_streams_health_from_a_driver_without_the_service_every_five_seconds(
    node_factory, make_driver, clock
):
    driver = make_driver()
    async with node_factory(release=V1_36) as node:
        await driver.start()
        await node.wait_for(lambda: len(node.recorder.records(method="NodeWatchResources")) == 1)
        [record] = node.recorder.records(method="NodeWatchResources")
        assert (record.status, record.streaming) == ("UNIMPLEMENTED", True)
        assert record.method == "/v1alpha1.DRAResourceHealth/NodeWatchResources", "advertised or not"
        await clock.advance(5)
        await node.wait_for(lambda: len(node.recorder.records(method="NodeWatchResources")) == 2)


async def test_1_37_never_opens_a_health_stream_the_driver_does_not_advertise(node_factory, make_driver, clock):
    driver = make_driver()
    async with node_factory(release=V1_37) as node:
        await driver.start()
        await node.wait_for(connected(node, driver.name))
        await clock.advance(5)
        await asyncio.sleep(0.2)
        assert node.recorder.records(method="NodeWatchResources") == []
        assert node.plugins.instances(driver.name)[0].chosen_health_service == ""


async def test_1_37_stops_asking_for_health_after_unimplemented(node_factory, make_driver, clock):
    """A driver that advertises health without serving it is asked once, not every five seconds."""
    driver = make_driver(health_advertised=["v1alpha1.DRAResourceHealth"])
    async with node_factory(release=V1_37) as node:
        await driver.start()
        await node.wait_for(lambda: len(node.recorder.records(method="NodeWatchResources")) == 1)
        [record] = node.recorder.records(method="NodeWatchResources")
        assert record.status == "UNIMPLEMENTED"
        await clock.advance(15)
        await asyncio.sleep(0.2)
        assert len(node.recorder.records(method="NodeWatchResources")) == 1


@pytest.mark.parametrize(
    ("advertised", "chosen"),
    [
        (["v1alpha1.DRAResourceHealth", "v1.DRAResourceHealth"], "v1.DRAResourceHealth"),
        (["v1alpha1.DRAResourceHealth"], "v1alpha1.DRAResourceHealth"),
        (["v1.DRAResourceHealth"], "v1.DRAResourceHealth"),
    ],
)
async def test_1_37_prefers_health_v1_whatever_the_driver_order(
    node_factory, make_driver, advertised: list[str], chosen: str
):
    driver = make_driver(health_advertised=advertised)
    async with node_factory(release=V1_37) as node:
        await driver.start()
        await node.wait_for(lambda: node.recorder.records(method="NodeWatchResources"))
        assert node.plugins.instances(driver.name)[0].chosen_health_service == chosen
        [record] = node.recorder.records(method="NodeWatchResources")[:1]
        assert record.method == f"/{chosen}/NodeWatchResources"


async def test_the_registration_handshake_is_recorded_too(node_factory, make_driver, tmp: Path):
    """GetInfo and NotifyRegistrationStatus belong to a trace: a rejected driver's handshake is all there is."""
    rejected = make_driver(name="rejected.example.com", versions=[], service_socket_name="rejected.sock")
    accepted = make_driver(versions=["v1.DRAPlugin"])
    live = tmp / "calls.jsonl"
    async with node_factory(record_calls=str(live)) as node:
        await rejected.start()
        await rejected.wait_for_status()
        await accepted.start()
        await node.wait_for(connected(node, accepted.name))
        handshake = [json.loads(line) for line in live.read_text().splitlines() if "Registration/" in line]
    by_socket: dict[str, list[tuple[str, object]]] = {}
    for record in handshake:
        request = record["request"].get("plugin_registered", record["request"])
        by_socket.setdefault(record["endpoint"], []).append((record["method"].rsplit("/", 1)[1], request))
    # the rejected socket is retried with backoff: its first attempt is the pair
    assert by_socket[str(rejected.registration_socket)][:2] == [("GetInfo", {}), ("NotifyRegistrationStatus", False)]
    assert by_socket[str(accepted.registration_socket)] == [("GetInfo", {}), ("NotifyRegistrationStatus", True)]
    info = next(r for r in handshake if r["endpoint"] == str(accepted.registration_socket))
    assert info["method"] == "/pluginregistration.Registration/GetInfo" and info["status"] == "OK"
    assert info["response"]["supported_versions"] == ["v1.DRAPlugin"] and info["request_id"] > 0
