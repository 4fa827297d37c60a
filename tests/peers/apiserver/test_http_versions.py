"""One object, three resource.k8s.io versions: written at one, read identically at every other.

The expected documents are kube-apiserver 1.36's own answers for the same object (recordings).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client

from kubelet_dra.workbench.testbed.serverthread import ServerThread

SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation")
VERSIONS = ("v1", "v1beta2", "v1beta1")


def as_written(recording: dict[str, Any]) -> dict[str, Any]:
    """A recording as a client would send it: without the fields the server sets, and without status."""
    metadata = {key: value for key, value in recording["metadata"].items() if key not in SERVER_SET}
    return {**{k: v for k, v in recording.items() if k != "status"}, "metadata": metadata}


def comparable(document: dict[str, Any]) -> dict[str, Any]:
    metadata = {key: value for key, value in document["metadata"].items() if key not in SERVER_SET}
    return {**document, "metadata": metadata}


@pytest.mark.parametrize("written_at", VERSIONS)
def test_resourceslice_reads_back_at_every_version_as_kube_does(
    apiserver: ServerThread, recorded: Callable[[str], Any], written_at: str
) -> None:
    code, created = apiserver.json(
        "POST",
        f"/apis/resource.k8s.io/{written_at}/resourceslices",
        body=as_written(recorded(f"resourceslice.{written_at}.json")),
    )
    assert code == 201, created
    name = created["metadata"]["name"]
    for version in VERSIONS:
        code, read = apiserver.json("GET", f"/apis/resource.k8s.io/{version}/resourceslices/{name}")
        assert code == 200
        assert comparable(read) == comparable(recorded(f"resourceslice.{version}.json"))


def test_allocated_claim_written_at_v1beta1_reads_back_at_v1_and_v1beta2(
    apiserver: ServerThread, recorded: Callable[[str], Any]
) -> None:
    base = "/apis/resource.k8s.io/v1beta1/namespaces/default/resourceclaims"
    beta1 = recorded("resourceclaim-allocated.v1beta1.json")
    code, created = apiserver.json("POST", base, body=as_written(beta1))
    assert code == 201, created
    with_status = {
        **beta1,
        "metadata": {**as_written(beta1)["metadata"], **{"resourceVersion": created["metadata"]["resourceVersion"]}},
    }
    code, updated = apiserver.json("PUT", f"{base}/claim1/status", body=with_status)
    assert code == 200, updated
    for version in VERSIONS:
        code, read = apiserver.json("GET", f"/apis/resource.k8s.io/{version}/namespaces/default/resourceclaims/claim1")
        expected = recorded(f"resourceclaim-allocated.{version}.json")
        assert (read["spec"], read["status"]) == (expected["spec"], expected["status"])
        assert read["apiVersion"] == f"resource.k8s.io/{version}"


def test_python_client_reads_one_slice_through_each_versioned_api(
    api_client: client.ApiClient, apiserver: ServerThread, recorded: Callable[[str], Any]
) -> None:
    apiserver.json(
        "POST", "/apis/resource.k8s.io/v1beta1/resourceslices", body=as_written(recorded("resourceslice.v1beta1.json"))
    )
    name = recorded("resourceslice.v1.json")["metadata"]["name"]
    v1 = client.ResourceV1Api(api_client).read_resource_slice(name)
    v1beta2 = client.ResourceV1beta2Api(api_client).read_resource_slice(name)
    v1beta1 = client.ResourceV1beta1Api(api_client).read_resource_slice(name)
    assert v1.spec.devices[3].attributes["index"].int == 3
    assert v1beta2.spec.devices[3].attributes["index"].int == 3
    assert v1beta1.spec.devices[3].basic.attributes["index"].int == 3
    listed = client.ResourceV1beta2Api(api_client).list_resource_slice()
    assert listed.api_version == "resource.k8s.io/v1beta2" and listed.kind == "ResourceSliceList"
