"""A real grpc.aio server built from the generated modules, on a Unix socket, called like the kubelet calls it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from kubelet_dra.peers.api import dra_health_v1alpha1_pb2 as health
from kubelet_dra.peers.api import dra_v1_pb2 as v1
from kubelet_dra.peers.api.services import DRA_HEALTH_V1ALPHA1, DRA_V1, full_method


class Driver(DRA_V1.servicer, DRA_HEALTH_V1ALPHA1.servicer):
    """Prepares every claim with one shared device and reports it healthy twice."""

    async def NodePrepareResources(self, request, context):
        device = v1.Device(pool_name="node-a", device_name="gpu-0", share_id="s1")
        return v1.NodePrepareResourcesResponse(
            claims={claim.uid: v1.NodePrepareResourceResponse(devices=[device]) for claim in request.claims}
        )

    async def NodeWatchResources(self, request, context):
        for timestamp in (100, 200):
            yield health.NodeWatchResourcesResponse(
                devices=[
                    health.DeviceHealth(
                        device=health.DeviceIdentifier(pool_name="node-a", device_name="gpu-0"),
                        health=health.HEALTHY,
                        last_updated_time=timestamp,
                    )
                ]
            )


@pytest.fixture
async def channel(socket_dir: Path) -> AsyncIterator[grpc.aio.Channel]:
    target = f"unix:{socket_dir / 'dra.sock'}"
    server = grpc.aio.server()
    DRA_V1.add_to_server(Driver(), server)
    DRA_HEALTH_V1ALPHA1.add_to_server(Driver(), server)
    assert server.add_insecure_port(target) != 0
    await server.start()
    async with grpc.aio.insecure_channel(target) as client:
        yield client
    await server.stop(grace=None)


def prepare_call(channel: grpc.aio.Channel, path: str) -> grpc.aio.UnaryUnaryMultiCallable:
    return channel.unary_unary(
        path,
        request_serializer=v1.NodePrepareResourcesRequest.SerializeToString,
        response_deserializer=v1.NodePrepareResourcesResponse.FromString,
    )


REQUEST = v1.NodePrepareResourcesRequest(claims=[v1.Claim(namespace="ns", uid="uid-1", name="claim-1")])


async def test_wire_path_reaches_the_v1_service(channel: grpc.aio.Channel):
    response = await prepare_call(channel, "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources")(
        REQUEST, timeout=10
    )
    (device,) = response.claims["uid-1"].devices
    assert (device.pool_name, device.device_name, device.share_id) == ("node-a", "gpu-0", "s1")


async def test_generated_stub_uses_the_wire_path(channel: grpc.aio.Channel):
    response = await DRA_V1.stub(channel).NodePrepareResources(REQUEST, timeout=10)
    assert list(response.claims) == ["uid-1"]


async def test_advertised_identifier_is_not_a_wire_path(channel: grpc.aio.Channel):
    with pytest.raises(grpc.aio.AioRpcError) as failure:
        await prepare_call(channel, full_method("v1.DRAPlugin", "NodePrepareResources"))(REQUEST, timeout=10)
    assert failure.value.code() == grpc.StatusCode.UNIMPLEMENTED


async def test_health_stream_is_server_streaming(channel: grpc.aio.Channel):
    stream = DRA_HEALTH_V1ALPHA1.stub(channel).NodeWatchResources(health.NodeWatchResourcesRequest(), timeout=10)
    updates = [response.devices[0].last_updated_time async for response in stream]
    assert updates == [100, 200]
