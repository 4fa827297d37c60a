"""Message layouts exactly as the kubelet's ``api.proto`` files define them, and every field surviving a trip
through bytes."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from kubelet_dra.peers.api import (
    dra_health_v1alpha1_pb2,
    dra_v1_pb2,
    dra_v1alpha4_pb2,
    dra_v1beta1_pb2,
    pluginregistration_pb2,
)

DRA_V1BETA1_LAYOUT = {
    "NodePrepareResourcesRequest": [(1, "claims", "rep Claim")],
    "NodePrepareResourcesResponse": [(1, "claims", "map<string, NodePrepareResourceResponse>")],
    "NodePrepareResourceResponse": [(1, "devices", "rep Device"), (2, "error", "string")],
    "Device": [
        (1, "request_names", "rep string"),
        (2, "pool_name", "string"),
        (3, "device_name", "string"),
        (4, "cdi_device_ids", "rep string"),
    ],
    "NodeUnprepareResourcesRequest": [(1, "claims", "rep Claim")],
    "NodeUnprepareResourcesResponse": [(1, "claims", "map<string, NodeUnprepareResourceResponse>")],
    "NodeUnprepareResourceResponse": [(1, "error", "string")],
    "Claim": [(1, "namespace", "string"), (2, "uid", "string"), (3, "name", "string")],
}

API_LAYOUTS = {
    pluginregistration_pb2: {
        "PluginInfo": [
            (1, "type", "string"),
            (2, "name", "string"),
            (3, "endpoint", "string"),
            (4, "supported_versions", "rep string"),
        ],
        "RegistrationStatus": [(1, "plugin_registered", "bool"), (2, "error", "string")],
        "RegistrationStatusResponse": [],
        "InfoRequest": [],
    },
    dra_v1_pb2: {
        **DRA_V1BETA1_LAYOUT,
        "Device": [*DRA_V1BETA1_LAYOUT["Device"], (5, "share_id", "opt string")],
    },
    dra_v1beta1_pb2: DRA_V1BETA1_LAYOUT,
    dra_v1alpha4_pb2: DRA_V1BETA1_LAYOUT,
    dra_health_v1alpha1_pb2: {
        "NodeWatchResourcesRequest": [],
        "NodeWatchResourcesResponse": [(1, "devices", "rep DeviceHealth")],
        "DeviceIdentifier": [(1, "pool_name", "string"), (2, "device_name", "string")],
        "DeviceHealth": [
            (1, "device", "DeviceIdentifier"),
            (2, "health", "HealthStatus"),
            (3, "last_updated_time", "int64"),
            (4, "health_check_timeout_seconds", "int64"),
            (5, "message", "string"),
        ],
    },
}

API_IDS = {module: module.__name__.rsplit(".", 1)[1] for module in API_LAYOUTS}
SCALARS = {
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_INT64: "int64",
}


def type_name(field: FieldDescriptor) -> str:
    named = field.message_type or field.enum_type
    return named.name if named else SCALARS[field.type]


def layout_notation(field: FieldDescriptor) -> str:
    """The field's type in the notation of ``API_LAYOUTS``: ``rep``/``opt`` before the type, ``map<K, V>``."""
    if field.message_type and field.message_type.GetOptions().map_entry:
        key, value = field.message_type.fields
        return f"map<{type_name(key)}, {type_name(value)}>"
    if field.is_repeated:
        return "rep " + type_name(field)
    explicit = field.has_presence and field.message_type is None
    return ("opt " if explicit else "") + type_name(field)


@pytest.mark.parametrize("api", API_LAYOUTS, ids=API_IDS.get)
def test_message_layouts_match_the_api_proto(api: ModuleType):
    actual = {
        name: [(field.number, field.name, layout_notation(field)) for field in message.fields]
        for name, message in api.DESCRIPTOR.message_types_by_name.items()
    }
    assert actual == API_LAYOUTS[api]


def test_health_status_enum_matches_the_spec():
    values = dra_health_v1alpha1_pb2.HealthStatus.DESCRIPTOR.values
    assert [(value.number, value.name) for value in values] == [(0, "UNKNOWN"), (1, "HEALTHY"), (2, "UNHEALTHY")]


def dra_samples(api: ModuleType) -> list[Message]:
    """Realistic DRA messages for one API version, every field set somewhere (share_id only where it exists)."""
    claim = api.Claim(namespace="gpu-test", uid="7f1c4a2e-0d5b-4c1e-9a55-3c2f1e0b9d11", name="pod0-gpu-x7k2q")
    device = api.Device(
        request_names=["gpu"],
        pool_name="node-a",
        device_name="gpu-0",
        cdi_device_ids=["k8s.gpu.example.com/gpu=common", "k8s.gpu.example.com/gpu=gpu-0"],
    )
    if "share_id" in api.Device.DESCRIPTOR.fields_by_name:
        device.share_id = "4b7e"
    return [
        api.NodePrepareResourcesRequest(claims=[claim, api.Claim(namespace="gpu-test", uid="u2", name="c2")]),
        api.NodePrepareResourcesResponse(
            claims={
                claim.uid: api.NodePrepareResourceResponse(
                    devices=[device, api.Device(pool_name="p", device_name="d")]
                ),
                "u2": api.NodePrepareResourceResponse(error="claim u2: no such device"),
            }
        ),
        api.NodeUnprepareResourcesRequest(claims=[claim]),
        api.NodeUnprepareResourcesResponse(
            claims={
                claim.uid: api.NodeUnprepareResourceResponse(),
                "u2": api.NodeUnprepareResourceResponse(error="busy"),
            }
        ),
    ]


SAMPLES = {
    pluginregistration_pb2: [
        pluginregistration_pb2.InfoRequest(),
        pluginregistration_pb2.PluginInfo(
            type="DRAPlugin",
            name="gpu.example.com",
            endpoint="/var/lib/kubelet/plugins/gpu.example.com/dra.sock",
            supported_versions=["v1.DRAPlugin", "v1beta1.DRAPlugin", "v1alpha1.DRAResourceHealth"],
        ),
        pluginregistration_pb2.RegistrationStatus(plugin_registered=False, error="RegisterPlugin error -- no handler"),
        pluginregistration_pb2.RegistrationStatus(plugin_registered=True),
        pluginregistration_pb2.RegistrationStatusResponse(),
    ],
    dra_v1_pb2: dra_samples(dra_v1_pb2),
    dra_v1beta1_pb2: dra_samples(dra_v1beta1_pb2),
    dra_v1alpha4_pb2: dra_samples(dra_v1alpha4_pb2),
    dra_health_v1alpha1_pb2: [
        dra_health_v1alpha1_pb2.NodeWatchResourcesRequest(),
        dra_health_v1alpha1_pb2.NodeWatchResourcesResponse(
            devices=[
                dra_health_v1alpha1_pb2.DeviceHealth(
                    device=dra_health_v1alpha1_pb2.DeviceIdentifier(pool_name="node-a", device_name="gpu-0"),
                    health=dra_health_v1alpha1_pb2.UNHEALTHY,
                    last_updated_time=1_767_225_600,
                    health_check_timeout_seconds=-1,
                    message="XID 79: fallen off the bus",
                ),
                dra_health_v1alpha1_pb2.DeviceHealth(health=dra_health_v1alpha1_pb2.HEALTHY),
            ]
        ),
    ],
}


def set_fields(message: Message) -> Iterator[tuple[str, str]]:
    """(message, field) for every field holding a non-default value, recursively."""
    for field, value in message.ListFields():
        yield message.DESCRIPTOR.name, field.name
        if field.message_type is None:
            continue
        if field.message_type.GetOptions().map_entry:
            children = value.values() if field.message_type.fields_by_name["value"].message_type else []
        else:
            children = value if field.is_repeated else [value]
        for child in children:
            yield from set_fields(child)


def all_fields(api: ModuleType) -> set[tuple[str, str]]:
    messages: list[Descriptor] = list(api.DESCRIPTOR.message_types_by_name.values())
    return {(message.name, field.name) for message in messages for field in message.fields}


@pytest.mark.parametrize("api", API_LAYOUTS, ids=API_IDS.get)
def test_every_field_round_trips_through_bytes(api: ModuleType):
    samples = SAMPLES[api]
    empty = {name for name, message in api.DESCRIPTOR.message_types_by_name.items() if not message.fields}
    assert empty <= {type(sample).DESCRIPTOR.name for sample in samples}, "field-less messages must be sampled too"
    assert {pair for sample in samples for pair in set_fields(sample)} == all_fields(api)
    for sample in samples:
        data = sample.SerializeToString(deterministic=True)
        decoded = type(sample).FromString(data)
        assert decoded == sample
        assert decoded.SerializeToString(deterministic=True) == data


def test_share_id_unset_and_empty_are_different_answers():
    unset = dra_v1_pb2.Device(pool_name="p", device_name="d")
    empty = dra_v1_pb2.Device(pool_name="p", device_name="d", share_id="")
    assert unset.SerializeToString() != empty.SerializeToString()
    unset_back = dra_v1_pb2.Device.FromString(unset.SerializeToString())
    empty_back = dra_v1_pb2.Device.FromString(empty.SerializeToString())
    assert not unset_back.HasField("share_id")
    assert empty_back.HasField("share_id")
    assert empty_back.share_id == ""
    assert unset_back != empty_back
