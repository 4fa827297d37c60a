"""The registration socket: ``pluginregistration.Registration`` as the Go helper answers it.

docs/protocol.md#helper-defaults.

GetInfo names the driver, its service socket and the advertised services; NotifyRegistrationStatus
records the kubelet's verdict and, like the helper, answers a rejection with an error of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import attrs
import grpc

from kubelet_dra.peers.api import pluginregistration_pb2 as pb
from kubelet_dra.peers.api.services import REGISTRATION, PluginType
from kubelet_dra.peers.driver import rpc
from kubelet_dra.peers.driver.knobs import Faults
from kubelet_dra.peers.driver.rpc import CallFailed
from kubelet_dra.peers.driver.settings import DriverSettings
from kubelet_dra.peers.driver.versions import advertised_versions
from kubelet_dra.peers.log import Logger


@attrs.frozen
class RegistrationRecord:
    """The last ``RegistrationStatus`` the kubelet sent, and how many it sent."""

    registered: bool
    error: str
    notifications: int


class Registration:
    def __init__(self, settings: DriverSettings, faults: Faults, log: Logger, stop: Callable[[], None]) -> None:
        self._settings = settings
        self._faults = faults
        self._log = log
        self._stop = stop
        self.status: RegistrationRecord | None = None
        self.handlers = self._handlers()

    def _handlers(self) -> dict[str, grpc.RpcMethodHandler]:
        return {
            REGISTRATION.method_path("GetInfo"): rpc.unary(
                REGISTRATION.method_path("GetInfo"), self.get_info, pb.InfoRequest, pb.PluginInfo, self._log
            ),
            REGISTRATION.method_path("NotifyRegistrationStatus"): rpc.unary(
                REGISTRATION.method_path("NotifyRegistrationStatus"),
                self.notify,
                pb.RegistrationStatus,
                pb.RegistrationStatusResponse,
                self._log,
            ),
        }

    async def get_info(self, request: pb.InfoRequest) -> pb.PluginInfo:
        if delay := self._faults.get("getinfo-delay"):
            await asyncio.sleep(delay)
        if error := self._faults.get("getinfo-error"):
            raise CallFailed(error)
        return pb.PluginInfo(
            type=self._faults.get("getinfo-type") or PluginType.DRA.value,
            name=self._settings.driver_name,
            endpoint=self._faults.get("getinfo-endpoint") or str(self._settings.service_socket),
            supported_versions=advertised_versions(
                self._faults.get("versions"),
                health=self._faults.get("health-advertise") if self._settings.health else None,
            ),
        )

    async def notify(self, request: pb.RegistrationStatus) -> pb.RegistrationStatusResponse:
        count = self.status.notifications + 1 if self.status else 1
        self.status = RegistrationRecord(request.plugin_registered, request.error, count)
        if not request.plugin_registered:
            self._log.error("kubelet rejected the registration", request.error)
            raise CallFailed(f"failed registration process: {request.error}")
        if error := self._faults.get("notify-error"):
            raise CallFailed(error)
        self._log.info("registered with the kubelet")
        if self._faults.get("exit-after-registration"):
            self._log.info("stopping after registration (fault exit-after-registration)")
            self._stop()
        return pb.RegistrationStatusResponse()
