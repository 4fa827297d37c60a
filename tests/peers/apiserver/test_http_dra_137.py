"""The resource.k8s.io fields 1.37 added, accepted, validated and served at every version in JSON and protobuf:
``skipNodeOperations`` on slices and allocation results (docs/releases.md), ``nodeAllocatableResources`` on
devices (§2.7)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kubelet_dra.peers.kubeproto import mapping
from kubelet_dra.workbench.testbed.serverthread import ServerThread, resource_slice_manifest

PROTOBUF = "application/vnd.kubernetes.protobuf"
RESOURCE = "/apis/resource.k8s.io"
NODE_ALLOCATABLE = {"cpu": {"mapping": {"deviceMultiplier": "2"}}, "memory": {"overhead": {"perPod": "1Gi"}}}


def at_version(document: dict[str, Any], version: str) -> dict[str, Any]:
    """A v1 slice written for ``version`` (v1beta1 wraps a device's fields in ``basic``)."""
    document = copy.deepcopy(document)
    document["apiVersion"] = f"resource.k8s.io/{version}"
    if version == "v1beta1":
        document["spec"]["devices"] = [
            {"name": device.pop("name"), "basic": device} for device in document["spec"]["devices"]
        ]
    return document


def post(server: ServerThread, path: str, document: dict[str, Any], protobuf: bool) -> tuple[int, Any]:
    if not protobuf:
        return server.json("POST", path, body=document)
    headers = {"Content-Type": PROTOBUF, "Accept": PROTOBUF}
    response = server.request("POST", path, body=mapping.encode(document), headers=headers)
    return response.status, mapping.decode(response.data)


def a_slice(server: ServerThread, **spec: Any) -> dict[str, Any]:
    server.json("POST", "/api/v1/nodes", body={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}})
    document = resource_slice_manifest("slice-a")
    document["spec"].update(spec)
    return document


@pytest.mark.parametrize("protobuf", [False, True], ids=["json", "protobuf"])
@pytest.mark.parametrize("version", ["v1", "v1beta2", "v1beta1"])
def test_a_slice_with_the_137_fields_round_trips(apiserver: ServerThread, version: str, protobuf: bool) -> None:
    document = a_slice(apiserver, skipNodeOperations=["*"])
    document["spec"]["devices"][0]["nodeAllocatableResources"] = NODE_ALLOCATABLE
    sent = at_version(document, version)

    code, created = post(apiserver, f"{RESOURCE}/{version}/resourceslices", sent, protobuf)
    assert code == 201, created
    assert created["spec"]["skipNodeOperations"] == ["*"]
    assert created["spec"]["devices"] == sent["spec"]["devices"]
    code, stored = apiserver.json("GET", f"{RESOURCE}/v1/resourceslices/slice-a")
    assert stored["spec"]["skipNodeOperations"] == ["*"]
    assert stored["spec"]["devices"][0]["nodeAllocatableResources"] == NODE_ALLOCATABLE


@pytest.mark.parametrize("protobuf", [False, True], ids=["json", "protobuf"])
def test_an_allocation_result_keeps_its_skip_node_operations(apiserver: ServerThread, protobuf: bool) -> None:
    claims = f"{RESOURCE}/v1/namespaces/default/resourceclaims"
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}
    body = {"metadata": {"name": "c"}, "spec": {"devices": {"requests": [request]}}}
    code, claim = apiserver.json(
        "POST", claims, body={"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", **body}
    )
    result = {"request": "gpu", "driver": "gpu.example.com", "pool": "p", "device": "d"}
    result["skipNodeOperations"] = ["NodeUnprepareResources"]
    claim["status"] = {"allocation": {"devices": {"results": [result]}}}
    if protobuf:
        headers = {"Content-Type": PROTOBUF, "Accept": PROTOBUF}
        response = apiserver.request("PUT", f"{claims}/c/status", body=mapping.encode(claim), headers=headers)
        code, updated = response.status, mapping.decode(response.data)
    else:
        code, updated = apiserver.json("PUT", f"{claims}/c/status", body=claim)
    assert code == 200, updated
    [stored] = updated["status"]["allocation"]["devices"]["results"]
    assert stored["skipNodeOperations"] == ["NodeUnprepareResources"]


@pytest.mark.parametrize(
    ("skip", "field", "message"),
    [
        (["NodePrepareResources"], "spec.skipNodeOperations", 'Invalid value: ["NodePrepareResources"]'),
        (["NodeRebootResources"], "spec.skipNodeOperations[0]", 'Unsupported value: "NodeRebootResources"'),
        (["*", "*"], "spec.skipNodeOperations[1]", 'Duplicate value: "*"'),
    ],
    ids=["prepare-alone", "unknown", "duplicate"],
)
def test_a_slice_with_a_wrong_skip_set_is_refused(apiserver: ServerThread, skip, field: str, message: str) -> None:
    code, status = apiserver.json(
        "POST", f"{RESOURCE}/v1/resourceslices", body=a_slice(apiserver, skipNodeOperations=skip)
    )
    assert code == 422, status
    causes = {cause["field"]: cause["message"] for cause in status["details"]["causes"]}
    assert causes[field].startswith(message), causes


@pytest.mark.parametrize("skip", [["NodePrepareResources", "NodeUnprepareResources"], ["NodePrepareResources", "*"]])
def test_prepare_may_be_skipped_together_with_unprepare(apiserver: ServerThread, skip: list[str]) -> None:
    code, created = apiserver.json(
        "POST", f"{RESOURCE}/v1/resourceslices", body=a_slice(apiserver, skipNodeOperations=skip)
    )
    assert code == 201, created


def test_a_node_allocatable_resource_needs_a_mapping_or_an_overhead(apiserver: ServerThread) -> None:
    document = a_slice(apiserver)
    document["spec"]["devices"][0]["nodeAllocatableResources"] = {"cpu": {}}
    code, status = apiserver.json("POST", f"{RESOURCE}/v1/resourceslices", body=document)
    assert code == 422, status
    [cause] = status["details"]["causes"]
    assert (cause["field"], cause["reason"]) == ("spec.devices[0].nodeAllocatableResources[cpu]", "FieldValueRequired")
