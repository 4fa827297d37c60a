"""Conversion between v1 (storage) and v1beta2/v1beta1, checked against a real kube-apiserver's recordings.

Each recording is one stored object read back at v1, v1beta2 and v1beta1. The whole documents are
compared: nothing in them is set per request (``managedFields`` keep the apiVersion they were
written with, at every version), so no field is excluded.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubelet_dra.peers.apiserver.conversion import from_storage, to_storage
from kubelet_dra.peers.apiserver.resources import RESOURCE_GROUP, lookup
from kubelet_dra.peers.apiserver.status import ApiError

RECORDINGS = Path(__file__).parents[2] / "fixtures" / "kube-apiserver-1.36"
SLICES = lookup(RESOURCE_GROUP, "v1", "resourceslices")
CLAIMS = lookup(RESOURCE_GROUP, "v1", "resourceclaims")
TEMPLATES = lookup(RESOURCE_GROUP, "v1", "resourceclaimtemplates")
CLASSES = lookup(RESOURCE_GROUP, "v1", "deviceclasses")
PODS = lookup("", "v1", "pods")


def recording(name: str) -> dict[str, Any]:
    return json.loads((RECORDINGS / name).read_text())


RECORDED = [
    pytest.param(SLICES, "resourceslice", version, id=f"resourceslice-{version}") for version in ("v1beta2", "v1beta1")
] + [pytest.param(CLAIMS, "resourceclaim-allocated", v, id=f"resourceclaim-{v}") for v in ("v1beta2", "v1beta1")]


@pytest.mark.parametrize(("rt", "base", "version"), RECORDED)
def test_stored_object_reads_back_exactly_as_kube_apiserver_serves_it(rt, base, version) -> None:
    stored = recording(f"{base}.v1.json")
    served = from_storage(rt, version, stored)
    assert served == recording(f"{base}.{version}.json")
    # Same key order too, so our JSON reads like kube-apiserver's.
    assert json.dumps(served) == json.dumps(recording(f"{base}.{version}.json"))


@pytest.mark.parametrize(("rt", "base", "version"), RECORDED)
def test_object_written_at_older_version_is_stored_as_kube_apiserver_stores_it(rt, base, version) -> None:
    assert to_storage(rt, recording(f"{base}.{version}.json")) == recording(f"{base}.v1.json")


def test_v1beta1_slice_wraps_each_device_in_basic() -> None:
    served = from_storage(SLICES, "v1beta1", recording("resourceslice.v1.json"))
    device = served["spec"]["devices"][0]
    assert set(device) == {"name", "basic"}
    assert device["basic"]["capacity"]["memory"] == {"value": "80Gi"}


def test_v1beta1_claim_request_is_flat() -> None:
    served = from_storage(CLAIMS, "v1beta1", recording("resourceclaim-allocated.v1.json"))
    assert served["spec"]["devices"]["requests"] == [
        {"name": "gpu", "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}
    ]


def full_slice() -> dict[str, Any]:
    """A v1 slice using every device field that moves into ``basic`` at v1beta1."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "node-a-gpus"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "node-a", "generation": 3, "resourceSliceCount": 2},
            "perDeviceNodeSelection": True,
            "devices": [
                {
                    "name": "gpu-0",
                    "attributes": {"model": {"string": "X"}, "driverVersion": {"version": "1.2.3"}},
                    "capacity": {"memory": {"value": "80Gi", "requestPolicy": {"default": "1Gi"}}},
                    "consumesCounters": [{"counterSet": "set", "counters": {"mem": {"value": "1Gi"}}}],
                    "nodeName": "node-a",
                    "taints": [
                        {"key": "example.com/broken", "effect": "NoSchedule", "timeAdded": "2026-01-01T00:00:00Z"}
                    ],
                    "bindsToNode": True,
                    "bindingConditions": ["ready"],
                    "bindingFailureConditions": ["failed"],
                    "allowMultipleAllocations": True,
                },
                {"name": "gpu-1", "allNodes": True},
                {"name": "gpu-2", "nodeSelector": {"nodeSelectorTerms": [{"matchFields": []}]}},
            ],
        },
    }


def full_claim_spec() -> dict[str, Any]:
    return {
        "devices": {
            "requests": [
                {
                    "name": "one",
                    "exactly": {
                        "deviceClassName": "gpu.example.com",
                        "selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}],
                        "allocationMode": "ExactCount",
                        "count": 2,
                        "adminAccess": False,
                        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
                        "capacity": {"requests": {"memory": "1Gi"}},
                    },
                },
                {
                    "name": "either",
                    "firstAvailable": [
                        {"name": "big", "deviceClassName": "big.example.com", "allocationMode": "All"},
                        {
                            "name": "small",
                            "deviceClassName": "small.example.com",
                            "allocationMode": "ExactCount",
                            "count": 1,
                        },
                    ],
                },
            ],
            "constraints": [{"requests": ["one", "either/big"], "matchAttribute": "gpu.example.com/model"}],
            "config": [{"requests": ["one"], "opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}}],
        }
    }


def full_claim() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "claim", "namespace": "default"},
        "spec": full_claim_spec(),
        "status": {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "one",
                            "driver": "gpu.example.com",
                            "pool": "node-a",
                            "device": "gpu-0",
                            "adminAccess": False,
                            "shareID": "6d1d9a6c-5a0c-4bd4-9e0a-3c3d0b8cbd53",
                            "consumedCapacity": {"memory": "1Gi"},
                        }
                    ],
                    "config": [
                        {
                            "source": "FromClaim",
                            "requests": ["one"],
                            "opaque": {"driver": "gpu.example.com", "parameters": {}},
                        }
                    ],
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}
                    ]
                },
                "allocationTimestamp": "2026-01-01T00:00:00Z",
            },
            "reservedFor": [{"resource": "pods", "name": "pod", "uid": "u1"}],
            "devices": [
                {
                    "driver": "gpu.example.com",
                    "pool": "node-a",
                    "device": "gpu-0",
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "lastTransitionTime": "2026-01-01T00:00:00Z",
                            "reason": "Configured",
                            "message": "",
                        }
                    ],
                    "networkData": {"interfaceName": "eth1", "ips": ["10.0.0.2/24"]},
                    "data": {"any": "thing"},
                }
            ],
        },
    }


def full_template() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "template", "namespace": "default"},
        "spec": {"metadata": {"labels": {"app": "x"}}, "spec": full_claim_spec()},
    }


def device_class() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.example.com"},
        "spec": {
            "selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}],
            "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"mode": "fast"}}}],
            "extendedResourceName": "example.com/gpu",
        },
    }


ROUND_TRIPS = [
    pytest.param(SLICES, full_slice, id="resourceslice"),
    pytest.param(CLAIMS, full_claim, id="resourceclaim"),
    pytest.param(TEMPLATES, full_template, id="resourceclaimtemplate"),
    pytest.param(CLASSES, device_class, id="deviceclass"),
]


@pytest.mark.parametrize("version", ["v1", "v1beta2", "v1beta1"])
@pytest.mark.parametrize(("rt", "make"), ROUND_TRIPS)
def test_round_trip_through_every_served_version_is_lossless(rt, make, version) -> None:
    stored = make()
    served = from_storage(rt, version, stored)
    assert served["apiVersion"] == f"resource.k8s.io/{version}"
    assert to_storage(rt, served) == stored


@pytest.mark.parametrize(("rt", "make"), ROUND_TRIPS)
def test_conversion_leaves_its_input_untouched(rt, make) -> None:
    stored = make()
    untouched = copy.deepcopy(stored)
    to_storage(rt, from_storage(rt, "v1beta1", stored))
    assert stored == untouched


def test_v1beta1_request_with_first_available_gets_no_exactly() -> None:
    served = from_storage(CLAIMS, "v1beta1", full_claim())
    either = served["spec"]["devices"]["requests"][1]
    assert "deviceClassName" not in either
    assert "exactly" not in to_storage(CLAIMS, served)["spec"]["devices"]["requests"][1]


def test_v1beta1_request_with_only_admin_access_false_still_becomes_exactly() -> None:
    # adminAccess is a pointer in Go: false is a value, so the request is a single-class one (left for validation).
    claim = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "spec": {"devices": {"requests": [{"name": "r", "adminAccess": False}]}},
    }
    assert to_storage(CLAIMS, claim)["spec"]["devices"]["requests"] == [
        {"name": "r", "exactly": {"adminAccess": False}}
    ]


def test_v1beta1_slice_empty_node_name_and_false_all_nodes_mean_unset() -> None:
    body = {
        "apiVersion": "resource.k8s.io/v1beta1",
        "kind": "ResourceSlice",
        "spec": {"driver": "d.example.com", "nodeName": "", "allNodes": False, "perDeviceNodeSelection": True},
    }
    assert to_storage(SLICES, body)["spec"] == {"driver": "d.example.com", "perDeviceNodeSelection": True}


def test_object_without_api_version_is_taken_at_the_storage_version() -> None:
    assert to_storage(CLAIMS, {"spec": full_claim_spec()})["spec"] == full_claim_spec()


@pytest.mark.parametrize(
    "api_version",
    ["resource.k8s.io/v1alpha3", "resource.k8s.io/v2", "v1", "apps/v1"],
    ids=lambda v: v.replace("/", "_"),
)
def test_unserved_api_version_in_the_body_is_a_bad_request(api_version: str) -> None:
    with pytest.raises(ApiError) as caught:
        to_storage(SLICES, {"apiVersion": api_version, "kind": "ResourceSlice"})
    assert caught.value.code == 400
    assert api_version in caught.value.message


def test_wrong_kind_in_the_body_is_a_bad_request() -> None:
    with pytest.raises(ApiError) as caught:
        to_storage(CLAIMS, {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice"})
    assert caught.value.code == 400


def test_core_objects_only_get_their_type_set() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    assert from_storage(PODS, "v1", pod) == {**pod, "apiVersion": "v1", "kind": "Pod"}


def deserialize(document: dict[str, Any], model: str) -> Any:
    """Decode as the official Python client decodes a response body."""
    return client.ApiClient().deserialize(json.dumps(document), model, "application/json")


def test_official_client_reads_our_v1beta1_objects() -> None:
    resource_slice = deserialize(
        from_storage(SLICES, "v1beta1", recording("resourceslice.v1.json")), "V1beta1ResourceSlice"
    )
    assert resource_slice.spec.devices[0].basic.attributes["model"].string == "LATEST-GPU-MODEL"
    claim = deserialize(from_storage(CLAIMS, "v1beta1", full_claim()), "V1beta1ResourceClaim")
    assert claim.spec.devices.requests[0].device_class_name == "gpu.example.com"
    assert claim.spec.devices.requests[1].first_available[0].allocation_mode == "All"
