"""What clients learn before they act: discovery, /version, OpenAPI, and content negotiation."""

from __future__ import annotations

import json

import pytest
import yaml
from kubernetes import client

from kubelet_dra.workbench.testbed.serverthread import ServerThread
from kubelet_dra.workbench.testbed.serverthread import resource_slice_manifest as slice_manifest

AGGREGATED = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
KUBECTL_DISCOVERY_ACCEPT = (
    f"{AGGREGATED},application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
)
TABLE_ACCEPT = (
    "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
)


def test_legacy_discovery_documents(apiserver: ServerThread) -> None:
    code, core = apiserver.json("GET", "/api")
    assert code == 200 and core["kind"] == "APIVersions" and core["versions"] == ["v1"]
    assert core["serverAddressByClientCIDRs"][0]["serverAddress"] == apiserver.url.split("://")[1]
    _, groups = apiserver.json("GET", "/apis")
    resource = next(group for group in groups["groups"] if group["name"] == "resource.k8s.io")
    assert resource["preferredVersion"]["version"] == "v1"
    assert [v["version"] for v in resource["versions"]] == ["v1", "v1beta2", "v1beta1"]
    _, group = apiserver.json("GET", "/apis/resource.k8s.io")
    assert group["kind"] == "APIGroup" and group["name"] == "resource.k8s.io"
    _, resources = apiserver.json("GET", "/apis/resource.k8s.io/v1beta2")
    assert {"resourceslices", "resourceclaims", "resourceclaims/status"} <= {r["name"] for r in resources["resources"]}


@pytest.mark.parametrize("path", ["/api", "/apis"])
def test_aggregated_discovery_when_asked_for(apiserver: ServerThread, path: str) -> None:
    response = apiserver.request("GET", path, headers={"Accept": KUBECTL_DISCOVERY_ACCEPT})
    assert response.status == 200
    assert response.headers["Content-Type"] == AGGREGATED
    document = json.loads(response.data)
    assert document["kind"] == "APIGroupDiscoveryList" and document["apiVersion"] == "apidiscovery.k8s.io/v2"


def test_python_client_discovery_and_version(api_client: client.ApiClient) -> None:
    groups = client.ApisApi(api_client).get_api_versions()
    assert "resource.k8s.io" in [group.name for group in groups.groups]
    version = client.VersionApi(api_client).get_code()
    assert (version.major, version.minor) == ("1", "36")
    assert version.git_version.startswith("v1.36.")


def test_openapi_v3_lets_kubectl_delegate_field_validation(apiserver: ServerThread) -> None:
    _, index = apiserver.json("GET", "/openapi/v3")
    assert {"api/v1", "apis/resource.k8s.io/v1", "apis/resource.k8s.io/v1beta2", "apis/resource.k8s.io/v1beta1"} <= set(
        index["paths"]
    )
    _, document = apiserver.json("GET", index["paths"]["apis/resource.k8s.io/v1"]["serverRelativeURL"])
    patch = document["paths"]["/apis/resource.k8s.io/v1/resourceslices/{name}"]["patch"]
    assert patch["x-kubernetes-group-version-kind"] == {
        "group": "resource.k8s.io",
        "version": "v1",
        "kind": "ResourceSlice",
    }
    assert "fieldValidation" in [parameter["name"] for parameter in patch["parameters"]]
    schema = document["components"]["schemas"]["io.k8s.api.resource.v1.ResourceSlice"]
    assert schema["x-kubernetes-group-version-kind"] == [
        {"group": "resource.k8s.io", "version": "v1", "kind": "ResourceSlice"}
    ]


def test_unknown_paths_are_404_status(apiserver: ServerThread) -> None:
    for path in ("/apis/example.com/v1/widgets", "/api/v2/pods", "/apis/resource.k8s.io/v9/resourceslices", "/nope"):
        code, body = apiserver.json("GET", path)
        assert (code, body["kind"], body["reason"]) == (404, "Status", "NotFound"), path


def test_unacceptable_accept_is_406(apiserver: ServerThread) -> None:
    response = apiserver.request("GET", "/api/v1/namespaces", headers={"Accept": "text/html"})
    assert response.status == 406 and json.loads(response.data)["reason"] == "NotAcceptable"


def test_yaml_when_asked(apiserver: ServerThread) -> None:
    response = apiserver.request("GET", "/api/v1/namespaces/default", headers={"Accept": "application/yaml"})
    assert response.headers["Content-Type"] == "application/yaml"
    assert yaml.safe_load(response.data)["metadata"]["name"] == "default"


def test_table_for_kubectl_get(apiserver: ServerThread) -> None:
    apiserver.json("POST", "/apis/resource.k8s.io/v1/resourceslices", body=slice_manifest("t1", node="node-x"))
    response = apiserver.request("GET", "/apis/resource.k8s.io/v1/resourceslices", headers={"Accept": TABLE_ACCEPT})
    assert response.headers["Content-Type"] == "application/json;as=Table;v=v1;g=meta.k8s.io"
    table = json.loads(response.data)
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Node", "Driver", "Pool", "Age"]
    (row,) = table["rows"]
    assert row["cells"][:4] == ["t1", "node-x", "gpu.example.com", "node-x"]
    assert row["object"]["kind"] == "PartialObjectMetadata" and row["object"]["metadata"]["name"] == "t1"
    _, full = apiserver.json(
        "GET", "/apis/resource.k8s.io/v1/resourceslices?includeObject=Object", headers={"Accept": TABLE_ACCEPT}
    )
    assert full["rows"][0]["object"]["spec"]["nodeName"] == "node-x"


def test_metadata_only_list(apiserver: ServerThread) -> None:
    accept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
    _, listed = apiserver.json("GET", "/api/v1/namespaces", headers={"Accept": accept})
    assert listed["kind"] == "PartialObjectMetadataList"
    assert {"kind", "apiVersion", "metadata"} == set(listed["items"][0])
