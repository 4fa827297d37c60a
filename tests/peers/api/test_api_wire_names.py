"""Every name that travels on the wire, checked against the strings of the kubelet's ``api.proto`` files
(docs/protocol.md#grpc-api).

The expected strings are typed here by hand on purpose: they are the specification, while the
code derives them from the generated descriptors.
"""

from __future__ import annotations

import pytest

from kubelet_dra.peers.api import services
from kubelet_dra.peers.api.services import (
    ALL_SERVICES,
    DRA_HEALTH_V1,
    DRA_HEALTH_V1ALPHA1,
    DRA_SERVICES,
    DRA_V1,
    DRA_V1ALPHA4,
    DRA_V1BETA1,
    REGISTRATION,
    PluginType,
)

WIRE_METHODS = {
    REGISTRATION: [
        "/pluginregistration.Registration/GetInfo",
        "/pluginregistration.Registration/NotifyRegistrationStatus",
    ],
    DRA_V1: [
        "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources",
        "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources",
    ],
    DRA_V1BETA1: [
        "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodePrepareResources",
        "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources",
    ],
    DRA_HEALTH_V1: ["/v1.DRAResourceHealth/NodeWatchResources"],
    DRA_HEALTH_V1ALPHA1: ["/v1alpha1.DRAResourceHealth/NodeWatchResources"],
    DRA_V1ALPHA4: ["/v1alpha3.Node/NodePrepareResources", "/v1alpha3.Node/NodeUnprepareResources"],
}

WIRE_NAMES = [
    # service, advertised identifier, wire service, proto package
    (REGISTRATION, "", "pluginregistration.Registration", "pluginregistration"),
    (DRA_V1, "v1.DRAPlugin", "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin", "k8s.io.kubelet.pkg.apis.dra.v1"),
    (
        DRA_V1BETA1,
        "v1beta1.DRAPlugin",
        "k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin",
        "k8s.io.kubelet.pkg.apis.dra.v1beta1",
    ),
    (DRA_HEALTH_V1, "v1.DRAResourceHealth", "v1.DRAResourceHealth", "v1"),
    (DRA_HEALTH_V1ALPHA1, "v1alpha1.DRAResourceHealth", "v1alpha1.DRAResourceHealth", "v1alpha1"),
    (DRA_V1ALPHA4, "v1alpha3.NodeService", "v1alpha3.Node", "v1alpha3"),
]

# method -> (request, response, server-streaming)
SPEC_RPCS = {
    REGISTRATION: {
        "GetInfo": ("InfoRequest", "PluginInfo", False),
        "NotifyRegistrationStatus": ("RegistrationStatus", "RegistrationStatusResponse", False),
    },
    **{
        service: {"NodeWatchResources": ("NodeWatchResourcesRequest", "NodeWatchResourcesResponse", True)}
        for service in (DRA_HEALTH_V1, DRA_HEALTH_V1ALPHA1)
    },
    **{
        service: {
            "NodePrepareResources": ("NodePrepareResourcesRequest", "NodePrepareResourcesResponse", False),
            "NodeUnprepareResources": ("NodeUnprepareResourcesRequest", "NodeUnprepareResourcesResponse", False),
        }
        for service in (DRA_V1, DRA_V1BETA1, DRA_V1ALPHA4)
    },
}


@pytest.mark.parametrize("service", ALL_SERVICES, ids=lambda service: service.wire_name)
def test_full_method_paths_match_the_spec(service: services.Service):
    assert list(service.method_paths) == WIRE_METHODS[service]
    for method, path in zip(service.methods, WIRE_METHODS[service], strict=True):
        assert service.method_path(method) == path


@pytest.mark.parametrize(("service", "advertised", "wire", "package"), WIRE_NAMES, ids=lambda value: str(value))
def test_advertised_and_wire_names_match_the_spec(service: services.Service, advertised, wire, package):
    assert service.advertised == advertised
    assert service.wire_name == wire
    assert service.pb2.DESCRIPTOR.package == package


@pytest.mark.parametrize("service", ALL_SERVICES, ids=lambda service: service.wire_name)
def test_rpc_shapes_match_the_spec(service: services.Service):
    shapes = {
        method.name: (method.input_type.name, method.output_type.name, method.server_streaming)
        for method in service.descriptor.methods
    }
    assert shapes == SPEC_RPCS[service]
    assert not any(method.client_streaming for method in service.descriptor.methods)


def test_the_pitfall_advertised_is_not_the_wire_name_for_v1_and_v1beta1():
    for service in DRA_SERVICES:
        assert service.advertised != service.wire_name
        assert service.wire_name.endswith("." + service.advertised)


def test_kubelet_orders_and_legacy_flags():
    assert [service.advertised for service in DRA_SERVICES] == ["v1.DRAPlugin", "v1beta1.DRAPlugin"]
    assert [service for service in ALL_SERVICES if service.legacy] == [DRA_V1ALPHA4]
    assert DRA_V1ALPHA4.also_advertised_as == ("1.0.0",)


def test_plugin_types():
    assert [str(kind) for kind in PluginType] == ["CSIPlugin", "DevicePlugin", "DRAPlugin"]


def test_generated_classes_are_reachable_from_the_table():
    for service in ALL_SERVICES:
        assert service.stub.__name__ == f"{service.name}Stub"
        assert service.servicer.__name__ == f"{service.name}Servicer"
    assert DRA_V1.message_class("Device") is DRA_V1.pb2.Device


def test_a_misspelt_method_fails_early():
    with pytest.raises(ValueError, match="has no method 'NodePrepareResource'"):
        DRA_V1.method_path("NodePrepareResource")


def test_full_method_helper():
    assert services.full_method("pluginregistration.Registration", "GetInfo") == (
        "/pluginregistration.Registration/GetInfo"
    )
