"""The v1alpha1.DRAResourceHealth stream: full lists, repeated, following changes made through the control channel."""

from __future__ import annotations

import asyncio
import time

import pytest
from driver_support import Env, channel

from kubelet_dra.peers.api import dra_health_v1alpha1_pb2 as pb
from kubelet_dra.peers.api.services import DRA_HEALTH_V1ALPHA1
from kubelet_dra.peers.driver import control
from kubelet_dra.peers.errors import UsageError


def states(response: pb.NodeWatchResourcesResponse) -> dict[str, str]:
    return {d.device.device_name: pb.HealthStatus.Name(d.health) for d in response.devices}


async def test_stream_repeats_the_full_list_and_follows_health_changes(env: Env) -> None:
    driver = env.driver_plugin(health=True, health_interval=0.2, devices=2)
    async with driver as plugin, channel(plugin.settings.service_socket) as opened:
        stream = DRA_HEALTH_V1ALPHA1.stub(opened).NodeWatchResources(pb.NodeWatchResourcesRequest())
        first = await stream.read()
        assert states(first) == {"device-0": "HEALTHY", "device-1": "HEALTHY"}
        assert {d.device.pool_name for d in first.devices} == {env.node}
        assert {d.health_check_timeout_seconds for d in first.devices} == {30}
        assert abs(first.devices[0].last_updated_time - time.time()) < 5
        started = time.monotonic()
        assert states(await stream.read()) == states(first)
        assert time.monotonic() - started < 1.0, "repeated well within the 30 s timeout"

        async def flip(state: str) -> pb.NodeWatchResourcesResponse:
            message = {"op": "health", "devices": {"device-1": state}, "message": f"now {state}"}
            answer = await control.request(plugin.settings.control_socket, message)
            assert answer["health"]["device-1"] == state
            async with asyncio.timeout(5):
                while states(report := await stream.read())["device-1"] != state.upper():
                    pass
            return report

        unhealthy = await flip("Unhealthy")
        assert states(unhealthy) == {"device-0": "HEALTHY", "device-1": "UNHEALTHY"}
        assert [d.message for d in unhealthy.devices] == ["", "now Unhealthy"]
        assert states(await flip("Healthy")) == {"device-0": "HEALTHY", "device-1": "HEALTHY"}
        stream.cancel()


async def test_health_requests_name_real_devices_and_states(env: Env) -> None:
    async with env.driver_plugin(health=True, devices=1) as plugin:
        with pytest.raises(UsageError, match="unknown device 'device-7'"):
            await control.request(plugin.settings.control_socket, {"op": "health", "devices": {"device-7": "Healthy"}})
        with pytest.raises(UsageError, match="unknown health 'Sick'"):
            await control.request(plugin.settings.control_socket, {"op": "health", "devices": {"device-0": "Sick"}})


async def test_without_health_there_is_no_stream(env: Env) -> None:
    async with env.driver_plugin() as plugin:
        with pytest.raises(UsageError, match="--health"):
            await control.request(plugin.settings.control_socket, {"op": "health", "devices": {"device-0": "Healthy"}})
