"""The service socket: which DRA services are served, under which names, and what they answer.

By default the driver serves and advertises ``v1.DRAPlugin`` and ``v1beta1.DRAPlugin`` (the
latter by converting to and from v1, as the helper's wrapper does); with ``--health`` it serves the
health stream as ``v1.DRAResourceHealth`` and ``v1alpha1.DRAResourceHealth`` and advertises both, as
the 1.37 helper does. The ``versions``, ``serve-advertised-name`` and ``health-advertise`` knobs change
that at run time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
from google.protobuf.message import Message

from kubelet_dra.peers.api import dra_v1_pb2 as v1
from kubelet_dra.peers.api.convert import to_service
from kubelet_dra.peers.api.services import DRA_V1, Service, full_method
from kubelet_dra.peers.driver import rpc
from kubelet_dra.peers.driver.claims import ClaimRef
from kubelet_dra.peers.driver.health import HealthBoard
from kubelet_dra.peers.driver.knobs import Faults
from kubelet_dra.peers.driver.preparer import Preparer
from kubelet_dra.peers.driver.versions import HEALTH_ADVERTISED, SERVED
from kubelet_dra.peers.log import Logger


def _claims(request: Message) -> list[ClaimRef]:
    return [ClaimRef(claim.namespace, claim.uid, claim.name) for claim in request.claims]


class DRAServices:
    """Method handlers for every DRA service the driver can serve, selected per call by the knobs."""

    def __init__(
        self, preparer: Preparer, health: HealthBoard | None, health_interval: float, faults: Faults, log: Logger
    ) -> None:
        self._preparer = preparer
        self._health = health
        self._health_interval = health_interval
        self._faults = faults
        self._log = log
        self._handlers: dict[tuple[str, str], grpc.RpcMethodHandler] = {}

    def table(self) -> dict[str, grpc.RpcMethodHandler]:
        """Method path → handler for what the knobs say is served right now."""
        by_advertised_name = self._faults.get("serve-advertised-name")
        table = {}
        for service in SERVED[self._faults.get("versions")]:
            name = service.advertised if by_advertised_name else service.wire_name
            for method in service.methods:
                path = full_method(name, method)
                table[path] = self._handler(service, method, path)
        if self._health is not None:
            for service in HEALTH_ADVERTISED["both"]:
                path = service.method_path("NodeWatchResources")
                table[path] = self._handler(service, "NodeWatchResources", path)
        return table

    def _handler(self, service: Service, method: str, path: str) -> grpc.RpcMethodHandler:
        key = (service.wire_name, path)
        if key not in self._handlers:
            self._handlers[key] = self._build(service, method, path)
        return self._handlers[key]

    def _build(self, service: Service, method: str, path: str) -> grpc.RpcMethodHandler:
        descriptor = service.descriptor.methods_by_name[method]
        request_class = service.message_class(descriptor.input_type.name)
        response_class = service.message_class(descriptor.output_type.name)
        if method == "NodeWatchResources" and self._health is not None:
            board, interval = self._health, self._health_interval

            async def reports(_: Message) -> AsyncIterator[Message]:
                async for report in board.stream(interval):
                    yield to_service(report, service)

            return rpc.server_streaming(path, reports, request_class, response_class, self._log)
        behaviour = self._prepare if method == "NodePrepareResources" else self._unprepare

        async def call(request: Message) -> Message:
            return to_service(await behaviour(to_service(request, DRA_V1)), service)

        return rpc.unary(path, call, request_class, response_class, self._log)

    async def _prepare(self, request: v1.NodePrepareResourcesRequest) -> v1.NodePrepareResourcesResponse:
        results = await self._preparer.prepare(_claims(request))
        response = v1.NodePrepareResourcesResponse()
        for uid, result in results.items():
            entry = response.claims[uid]
            entry.error = result.error
            for device in result.devices:
                entry.devices.add(
                    request_names=device.request_names,
                    pool_name=device.pool,
                    device_name=device.device,
                    cdi_device_ids=device.cdi_ids,
                    share_id=device.share_id,
                )
        return response

    async def _unprepare(self, request: v1.NodeUnprepareResourcesRequest) -> v1.NodeUnprepareResourcesResponse:
        results = await self._preparer.unprepare(_claims(request))
        response = v1.NodeUnprepareResourcesResponse()
        for uid, error in results.items():
            response.claims[uid].error = error
        return response
