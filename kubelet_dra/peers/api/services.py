"""The gRPC services kubelet-dra knows, what drivers advertise for them, and how the kubelet picks one.

A DRA driver lists *advertised identifiers* such as ``v1.DRAPlugin`` in
``PluginInfo.supported_versions`` but serves a *wire service* named after its proto package,
``k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin``. The two differ for v1 and v1beta1 (docs/protocol.md#grpc-api),
so every caller goes through this table instead of building names itself. Wire names and methods
are read from the generated descriptors, so the table cannot drift from ``proto/``.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import attrs
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import Message

from kubelet_dra.peers.api import (
    dra_health_v1_pb2,
    dra_health_v1_pb2_grpc,
    dra_health_v1alpha1_pb2,
    dra_health_v1alpha1_pb2_grpc,
    dra_v1_pb2,
    dra_v1_pb2_grpc,
    dra_v1alpha4_pb2,
    dra_v1alpha4_pb2_grpc,
    dra_v1beta1_pb2,
    dra_v1beta1_pb2_grpc,
    pluginregistration_pb2,
    pluginregistration_pb2_grpc,
)
from kubelet_dra.peers.errors import DriverError
from kubelet_dra.peers.gotext import go_quote, go_quote_list


class PluginType(enum.StrEnum):
    """``PluginInfo.type`` values the kubelet has handlers for; DRA requires exactly ``DRAPlugin``."""

    CSI = "CSIPlugin"
    DEVICE = "DevicePlugin"
    DRA = "DRAPlugin"


def full_method(wire_service: str, method: str) -> str:
    """The gRPC method path ``/<wire service>/<Method>`` that travels in the HTTP/2 ``:path``."""
    return f"/{wire_service}/{method}"


@attrs.frozen
class Service:
    """One gRPC service: its generated code, what drivers advertise for it and which kubelets call it."""

    name: str
    """The service name inside its ``.proto`` (``DRAPlugin``); generated classes are named after it."""
    pb2: ModuleType
    pb2_grpc: ModuleType
    role: str
    """What the service is for, in a few words for people."""
    kubelets: str
    """Kubernetes releases whose kubelet calls this service."""
    advertised: str = ""
    """The identifier a driver lists in ``supported_versions``; empty when never advertised."""
    also_advertised_as: tuple[str, ...] = ()
    """Other identifiers drivers used for it in the past."""
    legacy: bool = False
    """Only a ≤1.32 kubelet calls it; a 1.36 kubelet rejects drivers offering nothing else."""

    @property
    def descriptor(self) -> ServiceDescriptor:
        return self.pb2.DESCRIPTOR.services_by_name[self.name]

    @property
    def wire_name(self) -> str:
        """The fully-qualified service name the server must register (proto package + service)."""
        return self.descriptor.full_name

    @property
    def methods(self) -> tuple[str, ...]:
        return tuple(method.name for method in self.descriptor.methods)

    @property
    def method_paths(self) -> tuple[str, ...]:
        return tuple(full_method(self.wire_name, method) for method in self.methods)

    def method_path(self, method: str) -> str:
        """The full path of one of this service's methods; a misspelt method fails here, not as UNIMPLEMENTED."""
        if method not in self.methods:
            raise ValueError(f"{self.wire_name} has no method {method!r} (it has {', '.join(self.methods)})")
        return full_method(self.wire_name, method)

    @property
    def stub(self) -> type:
        """Client class: ``service.stub(channel)``; works with ``grpc`` and ``grpc.aio`` channels."""
        return getattr(self.pb2_grpc, f"{self.name}Stub")

    @property
    def servicer(self) -> type:
        """Server base class whose methods answer UNIMPLEMENTED until overridden."""
        return getattr(self.pb2_grpc, f"{self.name}Servicer")

    def add_to_server(self, servicer: Any, server: Any) -> None:
        """Register ``servicer`` on a ``grpc`` or ``grpc.aio`` server under the wire name."""
        getattr(self.pb2_grpc, f"add_{self.name}Servicer_to_server")(servicer, server)

    def message_class(self, name: str) -> type[Message]:
        """This API version's message class called ``name`` (e.g. ``NodePrepareResourcesRequest``)."""
        return getattr(self.pb2, name)


REGISTRATION = Service(
    name="Registration",
    pb2=pluginregistration_pb2,
    pb2_grpc=pluginregistration_pb2_grpc,
    role="plugin registration",
    kubelets="all",
)
DRA_V1 = Service(
    name="DRAPlugin",
    pb2=dra_v1_pb2,
    pb2_grpc=dra_v1_pb2_grpc,
    role="DRA node service",
    kubelets="1.34+",
    advertised="v1.DRAPlugin",
)
DRA_V1BETA1 = Service(
    name="DRAPlugin",
    pb2=dra_v1beta1_pb2,
    pb2_grpc=dra_v1beta1_pb2_grpc,
    role="DRA node service, no share_id",
    kubelets="1.32+",
    advertised="v1beta1.DRAPlugin",
)
DRA_HEALTH_V1 = Service(
    name="DRAResourceHealth",
    pb2=dra_health_v1_pb2,
    pb2_grpc=dra_health_v1_pb2_grpc,
    role="device health, optional",
    kubelets="1.37+; gate ResourceHealthStatus",
    advertised="v1.DRAResourceHealth",
)
DRA_HEALTH_V1ALPHA1 = Service(
    name="DRAResourceHealth",
    pb2=dra_health_v1alpha1_pb2,
    pb2_grpc=dra_health_v1alpha1_pb2_grpc,
    role="device health, optional; deprecated in 1.37",
    kubelets="1.34+; gate ResourceHealthStatus",
    advertised="v1alpha1.DRAResourceHealth",
)
HealthResponse = dra_health_v1_pb2.NodeWatchResourcesResponse | dra_health_v1alpha1_pb2.NodeWatchResourcesResponse
"""A health stream message: v1 and v1alpha1 have the same fields and enum values, so both are read alike."""
HEALTH_SERVICES: dict[str, Service] = {service.advertised: service for service in (DRA_HEALTH_V1, DRA_HEALTH_V1ALPHA1)}
"""The health services by advertised identifier."""
DRA_V1ALPHA4 = Service(
    name="Node",
    pb2=dra_v1alpha4_pb2,
    pb2_grpc=dra_v1alpha4_pb2_grpc,
    role="DRA node service v1alpha4",
    kubelets="1.31-1.32",
    advertised="v1alpha3.NodeService",
    also_advertised_as=("1.0.0",),
    legacy=True,
)

DRA_SERVICES: tuple[Service, ...] = (DRA_V1, DRA_V1BETA1)
"""The DRA node services a 1.36 kubelet accepts, in the kubelet's own order (used in its error text)."""

ALL_SERVICES: tuple[Service, ...] = (
    REGISTRATION,
    DRA_V1,
    DRA_V1BETA1,
    DRA_HEALTH_V1,
    DRA_HEALTH_V1ALPHA1,
    DRA_V1ALPHA4,
)
"""Every service kubelet-dra speaks, for listings."""

EMPTY_SERVICES_ERROR = "empty list of supported gRPC services (aka supported versions)"

_ADVERTISE_FIX = (
    f"list {' or '.join(go_quote(service.advertised) for service in DRA_SERVICES)} in"
    " PluginInfo.supported_versions: the advertised identifier, not the wire service name"
    ' or a legacy version like "1.0.0"'
)


def negotiate(supported_versions: Sequence[str], *, legacy: bool = False) -> Service:
    """The DRA node service the kubelet uses for a plugin, chosen like ``ValidatePlugin``.

    docs/protocol.md#dra-plugin-manager.

    A 1.36 kubelet takes the first identifier *in the plugin's order* that it supports and rejects
    the plugin when there is none. ``legacy`` only adds to that: where 1.36 would reject, the ≤1.32
    fall back to the v1alpha4 service applies, which is how drivers advertising ``"1.0.0"`` or
    ``"v1alpha3.NodeService"`` were served; a driver offering a current service still gets it.
    ``DriverError.what`` carries the kubelet's exact text.
    """
    if not supported_versions:
        raise DriverError(EMPTY_SERVICES_ERROR, fix=_ADVERTISE_FIX)
    accepted = {service.advertised: service for service in DRA_SERVICES}
    for identifier in supported_versions:
        if identifier in accepted:
            return accepted[identifier]
    if legacy:
        return DRA_V1ALPHA4
    raise DriverError(
        f"none of services supported by the plugin ({go_quote_list(supported_versions)}) are supported"
        f" by the kubelet ({go_quote_list(accepted)})",
        fix=_ADVERTISE_FIX,
    )


def pick_health_service(supported_versions: Sequence[str], preference: Sequence[str]) -> Service | None:
    """The health service a 1.37 kubelet streams from: the first of its own ``preference`` (v1, then v1alpha1)
    that the plugin advertised, else none (docs/releases.md); the plugin's order does not matter here."""
    advertised = set(supported_versions)
    return next((HEALTH_SERVICES[name] for name in preference if name in advertised), None)
