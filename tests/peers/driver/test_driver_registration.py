"""Registration: sockets where the Go helper puts them, GetInfo, NotifyRegistrationStatus, request IDs."""

from __future__ import annotations

import io
import stat

import grpc
import pytest
from driver_support import Env, get_info, notify

from kubelet_dra.peers import log
from kubelet_dra.peers.api.services import negotiate
from kubelet_dra.peers.driver import control


async def test_sockets_are_named_like_the_helpers_and_removed_on_stop(env: Env) -> None:
    async with env.driver_plugin() as plugin:
        registration = env.registry_dir / f"{env.driver}-reg.sock"
        service = env.plugin_dir(env.driver) / "dra.sock"
        assert plugin.settings.registration_socket == registration
        assert stat.S_ISSOCK(registration.stat().st_mode)
        assert stat.S_ISSOCK(service.stat().st_mode)
    assert not registration.exists()
    assert not service.exists()


async def test_get_info_describes_a_dra_plugin(env: Env) -> None:
    async with env.driver_plugin() as plugin:
        info = await get_info(plugin.settings.registration_socket)
    assert info.type == "DRAPlugin"
    assert info.name == env.driver
    assert info.endpoint == str(env.plugin_dir(env.driver) / "dra.sock")
    assert list(info.supported_versions) == ["v1.DRAPlugin", "v1beta1.DRAPlugin"]
    assert negotiate(info.supported_versions).advertised == "v1.DRAPlugin"


async def test_health_is_advertised_last_when_enabled_both_versions_as_the_1_37_helper_does(env: Env) -> None:
    async with env.driver_plugin(health=True) as plugin:
        info = await get_info(plugin.settings.registration_socket)
    assert list(info.supported_versions) == [
        "v1.DRAPlugin",
        "v1beta1.DRAPlugin",
        "v1.DRAResourceHealth",
        "v1alpha1.DRAResourceHealth",
    ]


async def test_notify_records_the_status_and_answers_a_rejection_with_an_error(env: Env) -> None:
    async with env.driver_plugin() as plugin:
        socket = plugin.settings.registration_socket
        await notify(socket, True)
        status = await control.request(plugin.settings.control_socket, {"op": "status"})
        assert status["status"]["registration"] == {"registered": True, "error": "", "notifications": 1}
        with pytest.raises(grpc.aio.AioRpcError) as caught:
            await notify(socket, False, "no handler registered for plugin type: DRAPlugin")
        assert caught.value.code() == grpc.StatusCode.UNKNOWN
        assert caught.value.details() == "failed registration process: no handler registered for plugin type: DRAPlugin"
        assert plugin.registration.status is not None
        assert plugin.registration.status.registered is False
        assert plugin.registration.status.notifications == 2


async def test_every_call_gets_the_next_process_wide_request_id(env: Env) -> None:
    stream = io.StringIO()
    log.configure(6, stream)
    try:
        async with env.driver_plugin() as plugin:
            await get_info(plugin.settings.registration_socket)
            await notify(plugin.settings.registration_socket, True)
    finally:
        log.configure(0)
    lines = [line for line in stream.getvalue().splitlines() if 'msg="handling request"' in line]
    ids = [int(line.split("requestID=")[1].split()[0]) for line in lines]
    assert len(ids) == 2 and ids[1] == ids[0] + 1
    assert "method=/pluginregistration.Registration/GetInfo" in lines[0]
    assert "v=6" in lines[0]
