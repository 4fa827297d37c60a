"""Registration of real gRPC drivers through a standalone Node: the handshake, its failures, re-registration."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from kubelet_dra.kubelet.kubelet import Node
from kubelet_dra.kubelet.pluginmanager import SocketPhase
from kubelet_dra.workbench.conformance.probe import ever_registered

from .support import FakeClock, TinyDriver, settle

DriverFactory = Callable[..., TinyDriver]


def registered(node: Node, name: str, count: int = 1) -> Callable[[], bool]:
    """``count`` instances of the driver and no handshake still in progress."""
    return lambda: (
        len(node.instances(name)) == count
        and all(state.phase is not SocketPhase.IN_PROGRESS for state in node.registrations())
    )


def diagnosed(node: Node, path: Path) -> Callable[[], bool]:
    return lambda: str(path) in node.diagnoses()


async def test_driver_registers_and_connects(node_factory, make_driver: DriverFactory):
    driver = make_driver()
    async with node_factory() as node:
        await driver.start()
        assert await driver.wait_for_status() == (True, "")
        await node.wait_for(lambda: registered(node, driver.name)() and node.instances()[0].connected)
        [state] = node.registrations()
        assert state.socket_path == str(driver.registration_socket)
        assert state.phase is SocketPhase.REGISTERED
        assert (state.name, state.endpoint) == (driver.name, str(driver.service_socket))
        assert node.chosen_services() == {(driver.name, str(driver.service_socket)): "v1.DRAPlugin"}
        assert node.diagnoses() == {}


async def test_socket_present_at_start_is_registered(node_factory, make_driver: DriverFactory):
    driver = await make_driver().start()
    async with node_factory() as node:
        await node.wait_for(registered(node, driver.name))
        assert driver.get_info_calls == 1


async def test_driver_restart_registers_again_and_removal_deregisters(node_factory, make_driver: DriverFactory):
    driver = make_driver()
    async with node_factory() as node:
        await driver.start()
        await driver.wait_for_status()

        await driver.stop()
        await node.wait_for(registered(node, driver.name, 0))
        assert node.registrations() == []

        await driver.start()
        await node.wait_for(registered(node, driver.name))
        assert await driver.wait_for_status(2) == (True, "")
        assert driver.get_info_calls == 2


async def test_a_driver_gone_right_after_registering_is_still_read_as_registered_from_the_node_s_calls(
    node_factory, make_driver: DriverFactory
):
    driver, stranger = make_driver(), make_driver("other.example.com")
    async with node_factory() as node:
        await stranger.start()
        await driver.start()
        await stranger.wait_for_status()
        await driver.wait_for_status()
        await driver.stop()
        await node.wait_for(registered(node, driver.name, 0))
        assert ever_registered(node.recorder.records(), driver.name)
        assert not ever_registered(node.recorder.records(), "never.example.com")
        assert ever_registered(node.recorder.records(), stranger.name)


async def test_removing_only_the_registration_socket_deregisters(node_factory, make_driver: DriverFactory):
    driver = await make_driver().start()
    async with node_factory() as node:
        await node.wait_for(registered(node, driver.name))
        driver.registration_socket.unlink()
        await node.wait_for(registered(node, driver.name, 0))


async def test_socket_recreated_at_same_path_is_unregistered_then_registered(node_factory, make_driver: DriverFactory):
    driver = await make_driver().start()
    async with node_factory() as node:
        await node.wait_for(registered(node, driver.name))
        first = node.instances(driver.name)[0]
        node.registration.desired.add_or_update(str(driver.registration_socket))  # a second create event
        await node.wait_for(lambda: node.instances(driver.name) and node.instances(driver.name)[0] is not first)
        assert driver.get_info_calls == 2


async def test_get_info_failure_backs_off_then_recovers(node_factory, make_driver: DriverFactory, clock: FakeClock):
    driver = make_driver(get_info_error=grpc.StatusCode.UNAVAILABLE)
    async with node_factory() as node:
        await driver.start()
        path = driver.registration_socket
        await node.wait_for(diagnosed(node, path))
        diagnosis = node.diagnoses()[str(path)]
        assert diagnosis.id == "F3"
        assert diagnosis.message == (
            f"RegisterPlugin error -- failed to get plugin info using RPC GetInfo at socket {path},"
            " err: rpc error: code = Unavailable desc = GetInfo failed on purpose"
        )
        [state] = node.registrations()
        assert state.phase is SocketPhase.BACKOFF and state.last_error == diagnosis.message
        assert driver.statuses == [], "no notification after a failed GetInfo"

        await settle()
        assert driver.get_info_calls == 1, "no retry inside the 0.5 s lock-out"
        await clock.advance(0.5)
        await driver.until(lambda: driver.get_info_calls == 2)
        await node.wait_for(lambda: node.registrations()[0].retry_at == clock.time() + 1.0)

        driver.get_info_error = None
        await clock.advance(1.0)
        assert await driver.wait_for_status() == (True, "")
        await node.wait_for(lambda: node.diagnoses() == {})


@pytest.mark.parametrize(
    ("overrides", "mode", "reason"),
    [
        (
            {"plugin_type": "DRAplugin"},
            "F4",
            "RegisterPlugin error -- no handler registered for plugin type: DRAplugin at socket {socket}",
        ),
        (
            {"versions": []},
            "F5",
            "RegisterPlugin error -- plugin validation failed with err: invalid supported gRPC versions of DRA driver"
            " plugin tiny.example.com at endpoint {endpoint}: empty list of supported gRPC services"
            " (aka supported versions)",
        ),
        (
            {"versions": ["1.0.0", "v1alpha3.NodeService"]},
            "F6",
            "RegisterPlugin error -- plugin validation failed with err: invalid supported gRPC versions of DRA driver"
            ' plugin tiny.example.com at endpoint {endpoint}: none of services supported by the plugin (["1.0.0"'
            ' "v1alpha3.NodeService"]) are supported by the kubelet (["v1.DRAPlugin" "v1beta1.DRAPlugin"])',
        ),
    ],
)
async def test_rejected_plugin_is_told_why(node_factory, make_driver: DriverFactory, overrides, mode, reason):
    driver = make_driver(**overrides)
    async with node_factory() as node:
        await driver.start()
        socket_path, endpoint = driver.registration_socket, driver.service_socket
        message = reason.format(socket=socket_path, endpoint=endpoint)
        assert await driver.wait_for_status() == (False, message)
        await node.wait_for(diagnosed(node, socket_path))
        diagnosis = node.diagnoses()[str(socket_path)]
        assert (diagnosis.id, diagnosis.socket, diagnosis.message) == (mode, str(socket_path), message)
        assert diagnosis.fix and diagnosis.cause
        assert node.registrations()[0].last_error == (
            f"RegisterPlugin error -- failed to send error at socket {socket_path}, err: {message}:"
            f" rpc error: code = Unknown desc = failed registration process: {message}"
        )
        assert node.instances() == []


async def test_second_socket_for_the_same_endpoint_is_rejected(node_factory, make_driver: DriverFactory):
    first = await make_driver().start()
    async with node_factory() as node:
        await node.wait_for(registered(node, first.name))
        hijacker = make_driver(socket_name="other-reg.sock", plugin_dir="other", endpoint=str(first.service_socket))
        await hijacker.start()
        message = (
            "RegisterPlugin error -- plugin registration failed with err: endpoint"
            f" {first.service_socket} already registered for DRA driver plugin {first.name}"
        )
        assert await hijacker.wait_for_status() == (False, message)
        await node.wait_for(diagnosed(node, hijacker.registration_socket))
        assert node.diagnoses()[str(hijacker.registration_socket)].id == "F7"
        assert len(node.instances(first.name)) == 1
        assert first.registration_socket != hijacker.registration_socket


async def test_unparsable_endpoint_is_rejected(node_factory, make_driver: DriverFactory, tmp: Path):
    endpoint = f"{tmp}/bad%zz.sock"
    driver = make_driver(endpoint=endpoint)
    async with node_factory() as node:
        await driver.start()
        registered_ok, message = await driver.wait_for_status()
        assert not registered_ok
        assert message == (
            "RegisterPlugin error -- plugin registration failed with err: create gRPC connection to DRA driver"
            f' tiny.example.com plugin at endpoint {endpoint}: parse "unix:{endpoint}": invalid URL escape "%zz"'
        )
        await node.wait_for(diagnosed(node, driver.registration_socket))
        assert node.diagnoses()[str(driver.registration_socket)].id == "F8"


async def test_failed_notification_deregisters_and_retries(node_factory, make_driver: DriverFactory):
    driver = make_driver(notify_error="driver refuses")
    async with node_factory() as node:
        await driver.start()
        await node.wait_for(diagnosed(node, driver.registration_socket))
        diagnosis = node.diagnoses()[str(driver.registration_socket)]
        assert diagnosis.id == "F9"
        assert diagnosis.message == (
            f"RegisterPlugin error -- failed to send registration status at socket {driver.registration_socket},"
            " err: : rpc error: code = Unknown desc = driver refuses"
        )
        assert driver.statuses == [(True, "")]
        assert node.instances() == [], "the kubelet deregisters when the notification fails"


async def test_stale_socket_fails_to_dial(node_factory, registry: Path):
    registry.mkdir(parents=True)
    stale = registry / "dead-reg.sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(stale))
    sock.close()
    async with node_factory() as node:
        await node.wait_for(diagnosed(node, stale), timeout=15)
        diagnosis = node.diagnoses()[str(stale)]
        assert diagnosis.id == "F2"
        assert diagnosis.message == (
            f"RegisterPlugin error -- dial failed at socket {stale}, err: failed to dial socket {stale},"
            " err: context deadline exceeded"
        )
        assert "connection refused" in diagnosis.cause


async def test_service_socket_in_registry_dir_fails_get_info(node_factory, make_driver: DriverFactory, registry):
    driver = make_driver(plugin_dir="../registry")
    async with node_factory() as node:
        await driver.start()
        await node.wait_for(registered(node, driver.name))
        service_socket = driver.service_socket.resolve()
        await node.wait_for(diagnosed(node, service_socket))
        diagnosis = node.diagnoses()[str(service_socket)]
        assert diagnosis.id == "F3"
        assert "code = Unimplemented" in diagnosis.message


async def test_dot_named_socket_is_ignored_with_a_diagnosis(node_factory, make_driver: DriverFactory):
    driver = make_driver(socket_name=".hidden-reg.sock")
    async with node_factory() as node:
        await driver.start()
        await node.wait_for(diagnosed(node, driver.registration_socket))
        assert node.diagnoses()[str(driver.registration_socket)].id == "F1"
        assert driver.get_info_calls == 0


async def test_kubelet_timing_registers_on_the_one_second_tick(node_factory, make_driver, clock: FakeClock):
    driver = make_driver()
    async with node_factory(kubelet_timing=True) as node:
        await driver.start()
        await node.wait_for(lambda: node.registrations())
        await asyncio.sleep(0.2)
        assert driver.get_info_calls == 0, "nothing happens before the next reconciler pass"
        await clock.advance(1.0)
        await node.wait_for(registered(node, driver.name))


async def test_kubelet_timing_retries_on_ticks_after_the_backoff(node_factory, make_driver, clock: FakeClock):
    driver = make_driver(get_info_error=grpc.StatusCode.INTERNAL)
    async with node_factory(kubelet_timing=True) as node:
        start = clock.time()
        await driver.start()
        await node.wait_for(lambda: node.registrations())

        async def tick() -> None:
            await clock.advance(1.0)
            await node.wait_for(lambda: node.registrations()[0].phase is not SocketPhase.IN_PROGRESS)

        attempts = []
        for _ in range(9):
            await tick()
            state = node.registrations()[0]
            if len(attempts) < driver.get_info_calls:
                attempts.append((clock.time() - start, state.retry_at - clock.time()))
        # attempt time, lock-out after it: retries wait for the next tick once the lock-out has ended
        assert attempts == [(1, 0.5), (2, 1), (3, 2), (5, 4), (9, 8)]
