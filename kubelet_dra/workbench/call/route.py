"""Where a call made by hand goes, decided as the kubelet decides: the socket's GetInfo, then service negotiation.

A registration socket's GetInfo names the endpoint and the services; the kubelet's own
negotiation picks one (or rejects the driver, and says why in its words). A socket that does
not serve GetInfo is taken as a service socket and called directly.
"""

from __future__ import annotations

import attrs

from kubelet_dra.kubelet.cm.dra.plugin import CallRecord
from kubelet_dra.kubelet.cm.dra.plugin.dra_plugin_manager import target_error
from kubelet_dra.kubelet.pluginmanager.operationexecutor.operation_generator import DEFAULT_TIMEOUTS, wrong_type_error
from kubelet_dra.kubelet.release import DEFAULT_RELEASE
from kubelet_dra.peers.api import pluginregistration_pb2 as registration_pb2
from kubelet_dra.peers.api.services import (
    DRA_HEALTH_V1ALPHA1,
    DRA_SERVICES,
    DRA_V1,
    REGISTRATION,
    PluginType,
    Service,
    negotiate,
    pick_health_service,
)
from kubelet_dra.peers.errors import DriverError, UsageError
from kubelet_dra.peers.log import Logger
from kubelet_dra.workbench.call.rawcall import call_once
from kubelet_dra.workbench.call.request import GET_INFO


@attrs.frozen
class Route:
    """The way to a DRA service: its endpoint and service (``None`` when the kubelet refuses), found by ``records``."""

    endpoint: str
    service: Service | None
    text: str
    records: tuple[CallRecord, ...] = ()
    refused: str = ""
    driver: str = ""
    versions: tuple[str, ...] = ()
    """What GetInfo advertised (empty for a service socket)."""

    def health_service(self) -> Service:
        """The health service the current kubelet streams from (v1 before v1alpha1, among those advertised); with
        none advertised, v1alpha1, which a 1.36 kubelet calls on every driver."""
        return pick_health_service(self.versions, DEFAULT_RELEASE.health_services) or DRA_HEALTH_V1ALPHA1


def kubelet_choice(socket: str, info: registration_pb2.PluginInfo) -> tuple[Service | None, str]:
    """(the DRA service the kubelet would call for this GetInfo answer, or ``None`` and why it rejects it)."""
    if info.type != PluginType.DRA:
        refusal = wrong_type_error(info, info.endpoint or socket, list(info.supported_versions), socket)
        return None, f"{refusal} (the type must be exactly {PluginType.DRA.value!r})"
    endpoint = info.endpoint or socket
    try:
        service = negotiate(info.supported_versions)
    except DriverError as err:
        return None, f"{err.what} (fix: {err.fix})"
    if problem := target_error(f"unix:{endpoint}"):
        return None, f"create gRPC connection to DRA driver {info.name} plugin at endpoint {endpoint}: {problem}"
    return service, ""


async def route(socket: str, chosen: str, log: Logger) -> Route:
    """Where a DRA call on ``socket`` goes: the endpoint its GetInfo names, or the socket itself."""
    forced = _chosen_service(chosen) if chosen else None
    info, record = await call_once(
        socket,
        REGISTRATION.method_path(GET_INFO),
        registration_pb2.InfoRequest(),
        registration_pb2.PluginInfo,
        timeout=DEFAULT_TIMEOUTS.get_info,
        log=log,
    )
    if info is None:
        if record.status != "UNIMPLEMENTED":
            return Route(socket, None, "", (record,))
        service = forced or DRA_V1
        return Route(socket, service, f"service socket (no GetInfo), {service.advertised}", (record,))
    assert isinstance(info, registration_pb2.PluginInfo)
    endpoint = info.endpoint or socket
    text = f"GetInfo: {info.name} at {endpoint}, advertises {', '.join(info.supported_versions) or 'nothing'}"
    versions = tuple(info.supported_versions)
    if forced is not None:
        text += f"; calling {forced.advertised} as asked"
        return Route(endpoint, forced, text, (record,), driver=info.name, versions=versions)
    service, refused = kubelet_choice(socket, info)
    if service is None:
        return Route(endpoint, None, text, (record,), refused, info.name, versions)
    text += f"; the kubelet picks {service.advertised}"
    return Route(endpoint, service, text, (record,), driver=info.name, versions=versions)


def _chosen_service(identifier: str) -> Service:
    for service in DRA_SERVICES:
        if identifier in (service.advertised, service.advertised.split(".")[0]):
            return service
    raise UsageError(
        f"--service {identifier!r} is not a DRA service the kubelet calls",
        fix=f"use {' or '.join(service.advertised for service in DRA_SERVICES)}",
    )
