"""Conversion between DRA API versions: share_id disappears for real, everything else survives."""

from __future__ import annotations

import pytest

from kubelet_dra.peers.api import dra_v1_pb2 as v1
from kubelet_dra.peers.api import dra_v1alpha4_pb2 as v1alpha4
from kubelet_dra.peers.api import dra_v1beta1_pb2 as v1beta1
from kubelet_dra.peers.api.convert import convert, to_service
from kubelet_dra.peers.api.services import DRA_V1, DRA_V1ALPHA4, DRA_V1BETA1

OLDER = [DRA_V1BETA1, DRA_V1ALPHA4]


def device(share_id: str | None) -> v1.Device:
    result = v1.Device(
        request_names=["gpu", "nic"],
        pool_name="node-a",
        device_name="gpu-0",
        cdi_device_ids=["k8s.gpu.example.com/gpu=gpu-0"],
    )
    if share_id is not None:
        result.share_id = share_id
    return result


def prepare_response(share_id: str | None) -> v1.NodePrepareResourcesResponse:
    return v1.NodePrepareResourcesResponse(
        claims={
            "uid-1": v1.NodePrepareResourceResponse(devices=[device(share_id), device(share_id)]),
            "uid-2": v1.NodePrepareResourceResponse(error="no such claim"),
        }
    )


@pytest.mark.parametrize("older", OLDER, ids=lambda service: service.advertised)
def test_requests_go_down_unchanged(older):
    request = v1.NodeUnprepareResourcesRequest(claims=[v1.Claim(namespace="ns", uid="uid-1", name="claim-1")])
    converted = to_service(request, older)
    assert isinstance(converted, older.pb2.NodeUnprepareResourcesRequest)
    assert converted.SerializeToString() == request.SerializeToString()
    assert to_service(converted, DRA_V1) == request


@pytest.mark.parametrize("older", OLDER, ids=lambda service: service.advertised)
def test_older_responses_come_up_unchanged(older):
    response = to_service(prepare_response(None), older)
    back = to_service(response, DRA_V1)
    assert isinstance(back, v1.NodePrepareResourcesResponse)
    assert back == prepare_response(None)


@pytest.mark.parametrize("share_id", ["", "s1"])
@pytest.mark.parametrize("older", OLDER, ids=lambda service: service.advertised)
def test_share_id_is_dropped_and_everything_else_kept(older, share_id):
    converted = to_service(prepare_response(share_id), older)
    back = v1.NodePrepareResourcesResponse.FromString(converted.SerializeToString())
    for claim in back.claims.values():
        for each in claim.devices:
            assert not each.HasField("share_id"), "field 5 survived as an unknown field"
    assert back == prepare_response(None)


def test_convert_is_typed_by_its_target():
    converted = convert(device("s1"), v1beta1.Device)
    assert type(converted) is v1beta1.Device
    assert converted.SerializeToString() == device(None).SerializeToString()
    assert convert(v1alpha4.Claim(uid="u"), v1.Claim) == v1.Claim(uid="u")


def test_same_version_is_returned_as_is():
    request = v1.NodePrepareResourcesRequest()
    assert to_service(request, DRA_V1) is request


def test_only_same_named_messages_convert():
    with pytest.raises(TypeError, match=r"cannot convert k8s\.io\.kubelet\.pkg\.apis\.dra\.v1\.Claim to "):
        convert(v1.Claim(), v1beta1.Device)
