"""Who may talk to the server and how: bearer tokens, node restriction, TLS with the written CA."""

from __future__ import annotations

import base64
import json
import ssl
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
import yaml
from cryptography import x509
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubelet_dra.workbench.testbed.serverthread import ServerThread
from kubelet_dra.workbench.testbed.serverthread import resource_slice_manifest as slice_manifest

SLICES = "/apis/resource.k8s.io/v1/resourceslices"


def test_no_token_is_401_exactly_like_kube(apiserver: ServerThread, recorded: Callable[[str], Any]) -> None:
    response = apiserver.request("GET", "/api/v1/namespaces", token=None)
    assert response.status == 401
    assert json.loads(response.data) == recorded("status-unauthorized.json")


@pytest.mark.parametrize("path", ["/api/v1/namespaces", "/apis", "/healthz"])
def test_invalid_token_is_401_everywhere(apiserver: ServerThread, path: str) -> None:
    assert apiserver.request("GET", path, token="not-a-token").status == 401


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz", "/readyz/ping", "/version"])
def test_health_and_version_need_no_token(apiserver: ServerThread, path: str) -> None:
    assert apiserver.request("GET", path, token=None).status == 200


def test_discovery_needs_a_token(apiserver: ServerThread) -> None:
    assert apiserver.request("GET", "/apis", token=None).status == 401


@pytest.fixture
def restricted(start_apiserver: Callable[..., ServerThread]) -> ServerThread:
    server = start_apiserver(node_restricted=True)
    with server.api_client() as admin:
        api = client.ResourceV1Api(admin)
        api.create_resource_slice(slice_manifest("b-slice", node="node-b"))
        api.create_resource_slice(slice_manifest("a-existing", node="node-a"))
    return server


@pytest.fixture
def node_a(restricted: ServerThread) -> Iterator[client.ApiClient]:
    with restricted.api_client(restricted.node_kubeconfig("node-a")) as api:
        yield api


def forbidden(call: Callable[[], Any]) -> str:
    with pytest.raises(ApiException) as denied:
        call()
    assert denied.value.status == 403
    body = json.loads(denied.value.body)
    assert body["reason"] == "Forbidden"
    return body["message"]


def test_node_writes_its_own_slices(node_a: client.ApiClient) -> None:
    api = client.ResourceV1Api(node_a)
    api.create_resource_slice(slice_manifest("a-new", node="node-a"))
    api.patch_resource_slice("a-new", {"spec": {"pool": {"generation": 2}}})
    api.delete_resource_slice("a-new")
    api.delete_collection_resource_slice(field_selector="spec.nodeName=node-a")
    assert api.list_resource_slice(field_selector="spec.nodeName=node-a").items == []


def test_node_may_not_publish_for_another_node(node_a: client.ApiClient) -> None:
    api = client.ResourceV1Api(node_a)
    message = forbidden(lambda: api.create_resource_slice(slice_manifest("stolen", node="node-b")))
    assert "this user running on node 'node-a' may not modify resourceslices on node 'node-b'" in message


def test_node_may_not_change_another_nodes_slice(node_a: client.ApiClient) -> None:
    api = client.ResourceV1Api(node_a)
    relabel = {"metadata": {"labels": {"owner": "node-a"}}}
    forbidden(lambda: api.patch_resource_slice("b-slice", relabel))
    current = api.read_resource_slice("b-slice")
    current.metadata.labels = {"owner": "node-a"}
    forbidden(lambda: api.replace_resource_slice("b-slice", current))
    assert api.read_resource_slice("b-slice").metadata.labels is None


def test_node_may_not_touch_another_nodes_slices(node_a: client.ApiClient) -> None:
    api = client.ResourceV1Api(node_a)
    forbidden(lambda: api.delete_resource_slice("b-slice"))
    forbidden(lambda: api.delete_collection_resource_slice())
    forbidden(lambda: api.delete_collection_resource_slice(field_selector="spec.nodeName=node-b"))
    assert api.read_resource_slice("b-slice").spec.node_name == "node-b"


@pytest.mark.parametrize(
    "selector", ["", "spec.driver=gpu.example.com", "spec.nodeName=node-b", "spec.nodeName!=node-a"]
)
@pytest.mark.parametrize(
    ("method", "query", "verb"),
    [("GET", "", "list"), ("GET", "watch=true&timeoutSeconds=1&", "watch"), ("DELETE", "", "deletecollection")],
)
def test_node_touches_slices_as_a_collection_only_by_its_own_name(
    restricted: ServerThread, selector: str, method: str, query: str, verb: str
) -> None:
    """The Node authorizer's rule, with its Status as kube-apiserver 1.36.2 answers a node identity."""
    token = restricted.call(restricted.server.node_token, "node-a")
    response = restricted.request(method, f"{SLICES}?{query}fieldSelector={selector}", token=token)
    assert response.status == 403
    assert json.loads(response.data) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f'resourceslices.resource.k8s.io is forbidden: User "system:node:node-a" cannot {verb} resource'
        ' "resourceslices" in API group "resource.k8s.io" at the cluster scope: can only list/watch/deletecollection'
        " resourceslices with nodeName field selector",
        "reason": "Forbidden",
        "details": {"group": "resource.k8s.io", "kind": "resourceslices"},
        "code": 403,
    }
    own = restricted.request("GET", f"{SLICES}?fieldSelector=spec.nodeName%3Dnode-a", token=token)
    assert [item["metadata"]["name"] for item in json.loads(own.data)["items"]] == ["a-existing"]


def test_node_reads_everything_but_writes_nothing_else(node_a: client.ApiClient) -> None:
    core = client.CoreV1Api(node_a)
    assert {ns.metadata.name for ns in core.list_namespace().items} >= {"default"}
    message = forbidden(lambda: core.create_namespaced_config_map("default", {"metadata": {"name": "x"}}))
    assert message == (
        'configmaps is forbidden: User "system:node:node-a" cannot create resource "configmaps" '
        'in API group "" in the namespace "default"'
    )


def test_admin_is_not_restricted(restricted: ServerThread) -> None:
    with restricted.api_client() as admin:
        client.ResourceV1Api(admin).delete_resource_slice("b-slice")


def test_kubeconfig_is_private_and_carries_the_ca(apiserver: ServerThread) -> None:
    path = Path(apiserver.kubeconfig)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    document = yaml.safe_load(path.read_text())
    cluster = document["clusters"][0]["cluster"]
    assert cluster["server"] == apiserver.url
    assert base64.b64decode(cluster["certificate-authority-data"]) == apiserver.server.ca_cert
    assert document["users"][0]["user"]["token"] == apiserver.server.admin_token


def test_serving_certificate_verifies_with_the_ca_for_loopback_names(apiserver: ServerThread) -> None:
    port = int(apiserver.url.rsplit(":", 1)[1])
    pem = ssl.get_server_certificate(("127.0.0.1", port))
    names = x509.load_pem_x509_certificate(pem.encode()).extensions.get_extension_for_class(x509.SubjectAlternativeName)
    assert {str(ip) for ip in names.value.get_values_for_type(x509.IPAddress)} >= {"127.0.0.1", "::1"}
    assert "localhost" in names.value.get_values_for_type(x509.DNSName)
    verified = urllib3.PoolManager(ca_certs=str(apiserver.server.ca_cert_path))
    assert verified.request("GET", f"https://localhost:{port}/healthz", retries=False).status == 200
    with pytest.raises(urllib3.exceptions.SSLError):
        urllib3.PoolManager().request("GET", f"{apiserver.url}/healthz", retries=False)


def test_plain_http_only_when_asked(start_apiserver: Callable[..., ServerThread]) -> None:
    server = start_apiserver(tls=False)
    assert server.url.startswith("http://") and server.server.ca_cert_path is None
    assert "certificate-authority-data" not in Path(server.kubeconfig).read_text()
    with server.api_client() as api:
        assert client.VersionApi(api).get_code().git_version.endswith("-kubelet-dra")


def test_node_writes_what_its_kubelet_writes_and_not_for_another_node(restricted: ServerThread) -> None:
    """The Node authorizer's and NodeRestriction's decisions, in kube-apiserver 1.36.2's words."""
    token = restricted.call(restricted.server.node_token, "node-a")
    leases = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
    restricted.json("POST", "/api/v1/nodes", body={"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-b"}})
    pods = "/api/v1/namespaces/default/pods"
    for name, node in (("on-a", "node-a"), ("on-b", "node-b")):
        body = {"metadata": {"name": name}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "x"}]}}
        assert restricted.json("POST", pods, body=body)[0] == 201

    def write(method: str, path: str, body: Any = None, content_type: str = "application/json") -> tuple[int, str]:
        code, answer = restricted.json(method, path, token=token, body=body, headers={"Content-Type": content_type})
        return code, answer.get("message", "") if code >= 400 else ""

    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "spec": {"leaseDurationSeconds": 40}}
    merge = "application/merge-patch+json"
    assert write("POST", "/api/v1/nodes", {"metadata": {"name": "node-a"}}) == (201, "")
    assert write("PATCH", "/api/v1/nodes/node-a/status", {"status": {"phase": "Running"}}, merge) == (200, "")
    assert write("PATCH", "/api/v1/nodes/node-b/status", {"status": {}}, merge) == (
        403,
        'nodes "node-b" is forbidden: node "node-a" is not allowed to modify node "node-b"',
    )
    assert write("POST", leases, {**lease, "metadata": {"name": "node-a"}}) == (201, "")
    assert write("POST", leases, {**lease, "metadata": {"name": "node-b"}}) == (
        403,
        'leases.coordination.k8s.io "node-b" is forbidden: can only access node lease with the same name as the'
        " requesting node",
    )
    assert write("PUT", f"{leases}/node-b", {**lease, "metadata": {"name": "node-b"}})[1].endswith(
        'cannot update resource "leases" in API group "coordination.k8s.io" in the namespace "kube-node-lease":'
        " can only access node lease with the same name as the requesting node"
    )
    csinode = {"apiVersion": "storage.k8s.io/v1", "kind": "CSINode", "spec": {"drivers": []}}
    assert write("POST", "/apis/storage.k8s.io/v1/csinodes", {**csinode, "metadata": {"name": "node-a"}})[0] == 201
    assert write("POST", "/apis/storage.k8s.io/v1/csinodes", {**csinode, "metadata": {"name": "node-b"}})[0] == 403
    assert write("PATCH", f"{pods}/on-a/status", {"status": {"message": "ok"}}, merge) == (200, "")
    assert write("PATCH", f"{pods}/on-b/status", {"status": {"message": "ok"}}, merge) == (
        403,
        'pods "on-b" is forbidden: node "node-a" can only update pod status for pods with spec.nodeName set to itself',
    )
    assert write("DELETE", f"{pods}/on-b")[0] == 403
    assert write("DELETE", f"{pods}/on-a")[0] == 200
