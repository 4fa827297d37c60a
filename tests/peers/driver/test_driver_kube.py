"""``kubelet_dra.peers.kube``: kubeconfig errors, async requests and watches, and the resource.k8s.io fallback."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from driver_support import NAMESPACE, RESOURCE, create_claim, create_node, unique

from kubelet_dra.peers.apiserver.server import EmbeddedAPIServer
from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.peers.kube import config
from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path
from kubelet_dra.peers.kube.config import in_cluster_kubeconfig, load_configuration
from kubelet_dra.peers.kube.resource import ResourceAPI

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "{server}"}}}}]
contexts: [{{name: c, context: {{cluster: c, user: u}}}}]
users: [{{name: u, user: {{token: secret-token}}}}]
current-context: c
"""


def changed(old: str, new: str) -> str:
    """The kubeconfig above, of server https://x, with ``old`` replaced by ``new``."""
    return KUBECONFIG.format(server="https://x").replace(old, new)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "does not exist"),
        ("clusters: [unclosed", "not valid YAML"),
        ("- a list", "not a YAML mapping"),
        ("apiVersion: v1\nkind: Config\n", "has no clusters"),
        (KUBECONFIG.format(server="https://x").replace("current-context: c", "current-context: nope"), "unusable"),
        (changed('server: "https://x"', "insecure-skip-tls-verify: true"), "cluster.server must be a non-empty string"),
        (changed('"https://x"', '"https://x", insecure-skip-tls-verify: yes-please'), "true or false"),
        (changed("token: secret-token", "tokenFile: gone"), "user.tokenFile cannot be read"),
        (changed('"https://x"', '"https://x", certificate-authority: gone.crt'), "names a file that does not exist"),
        (changed("token: secret-token", "client-key-data: '%%%'"), "user.client-key-data is not base64"),
        (changed("contexts: [", "contexts: [{name: c, context: {cluster: c}}, "), "2 entries named 'c'"),
    ],
)
def test_bad_kubeconfig_names_file_and_problem(tmp_path: Path, content: str | None, problem: str) -> None:
    path = tmp_path / "kubeconfig"
    if content is not None:
        path.write_text(content)
    with pytest.raises(ConfigError) as caught:
        load_configuration(str(path))
    assert caught.value.where == str(path)
    assert problem in caught.value.what
    assert "--kubeconfig" in caught.value.fix


def test_kubeconfig_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.format(server="https://127.0.0.1:6443"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(path))
    assert load_configuration().host == "https://127.0.0.1:6443"


async def test_request_errors_carry_the_status_message(kube: KubeClient) -> None:
    name = unique("missing")
    with pytest.raises(KubeApiError) as caught:
        await kube.request("GET", api_path("", "v1", "nodes", name=name))
    assert caught.value.not_found
    assert caught.value.message == f'nodes "{name}" not found'


async def test_unreachable_server_is_an_api_error_with_code_zero(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG.format(server="http://127.0.0.1:1"))
    client = KubeClient.from_kubeconfig(str(path), timeout=2)
    try:
        with pytest.raises(KubeApiError) as caught:
            await client.request("GET", "/version")
        assert caught.value.code == 0
        assert "cannot reach the API server at http://127.0.0.1:1" in caught.value.message
    finally:
        client.close()


async def test_watch_streams_events_and_stops_when_closed(kube: KubeClient) -> None:
    nodes = api_path("", "v1", "nodes")
    listed = await kube.request("GET", nodes)
    version = listed["metadata"]["resourceVersion"]
    name = unique("watched")
    async with contextlib.aclosing(kube.watch(nodes, {"resourceVersion": version})) as events:
        await create_node(kube, name)
        async with asyncio.timeout(10):
            async for event in events:
                if event.object["metadata"]["name"] == name:
                    break
    assert event.type == "ADDED"


async def test_watch_from_a_too_old_version_raises_expired(tmp_path: Path) -> None:
    async with EmbeddedAPIServer(tls=False, history_size=2) as server:
        client = KubeClient.from_kubeconfig(str(server.kubeconfig(tmp_path / "kubeconfig")))
        try:
            for _ in range(4):
                await create_node(client, unique("node"))
            with pytest.raises(KubeApiError) as caught:
                async with contextlib.aclosing(
                    client.watch(api_path("", "v1", "nodes"), {"resourceVersion": "1"})
                ) as events:
                    async with asyncio.timeout(10):
                        async for _ in events:
                            pass
        finally:
            client.close()
    assert caught.value.expired
    assert caught.value.message.startswith("too old resource version: 1")


async def test_claims_are_read_at_v1_from_a_current_server(kube: KubeClient) -> None:
    claim = await create_claim(kube, driver="gpu.example.com", pool="node")
    resources = ResourceAPI(kube)
    fetched = await resources.get_claim(NAMESPACE, claim["metadata"]["name"])
    assert fetched["apiVersion"] == f"{RESOURCE}/v1"
    assert fetched["metadata"]["uid"] == claim["metadata"]["uid"]
    assert resources.version == "v1"


@contextlib.asynccontextmanager
async def old_server(served: str, hits: Counter[str]) -> AsyncIterator[str]:
    """A plain-HTTP API server that serves resource.k8s.io only at ``served`` (like a 1.32 cluster: v1beta1)."""

    async def claim(request: web.Request) -> web.Response:
        version, name = request.match_info["version"], request.match_info["name"]
        hits[version] += 1
        if version != served:
            status: dict[str, Any] = {
                "kind": "Status",
                "apiVersion": "v1",
                "status": "Failure",
                "message": "the server could not find the requested resource",
                "reason": "NotFound",
                "code": 404,
            }
            return web.json_response(status, status=404)
        if name == "missing":
            status = {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404}
            status["message"] = f'resourceclaims.resource.k8s.io "{name}" not found'
            return web.json_response(status, status=404)
        return web.json_response({"apiVersion": f"{RESOURCE}/{version}", "metadata": {"name": name, "uid": "u-1"}})

    app = web.Application()
    app.router.add_get("/apis/resource.k8s.io/{version}/namespaces/{ns}/resourceclaims/{name}", claim)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def test_claims_fall_back_to_older_versions_and_remember_the_one_that_answered(tmp_path: Path) -> None:
    hits: Counter[str] = Counter()
    async with old_server("v1beta1", hits) as url:
        path = tmp_path / "kubeconfig"
        path.write_text(KUBECONFIG.format(server=url))
        client = KubeClient.from_kubeconfig(str(path))
        try:
            resources = ResourceAPI(client)
            first = await resources.get_claim("default", "claim-a")
            assert first["apiVersion"] == f"{RESOURCE}/v1beta1"
            assert hits == Counter({"v1": 1, "v1beta2": 1, "v1beta1": 1})
            await resources.get_claim("default", "claim-b")
            assert hits["v1beta1"] == 2 and hits["v1"] == 1, "the working version is used directly"
            with pytest.raises(KubeApiError) as caught:
                await resources.get_claim("default", "missing")
            assert caught.value.message == 'resourceclaims.resource.k8s.io "missing" not found'
        finally:
            client.close()


def service_account(directory: Path, token: str = "first") -> Path:
    directory.mkdir()
    (directory / "token").write_text(token + "\n")
    (directory / "ca.crt").write_text("not checked until a request is made\n")
    return directory


def test_in_cluster_kubeconfig_reads_the_rotated_token(tmp_path: Path) -> None:
    account = service_account(tmp_path / "sa")
    path = tmp_path / "kubeconfig"
    path.write_text(
        in_cluster_kubeconfig(str(account), {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"})
    )
    configuration = load_configuration(str(path))
    assert configuration.host == "https://10.0.0.1:443"
    assert configuration.ca_file == str(account / "ca.crt")
    assert configuration.authorization() == "Bearer first"
    (account / "token").write_text("second\n")  # the kubelet rotated it
    assert configuration.authorization() == "Bearer second"


def test_in_cluster_kubeconfig_brackets_an_ipv6_host(tmp_path: Path) -> None:
    account = service_account(tmp_path / "sa")
    text = in_cluster_kubeconfig(str(account), {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"})
    assert "server: https://[fd00::1]:443" in text


@pytest.mark.parametrize(
    ("environ", "missing", "where"),
    [
        ({}, "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set", "environment"),
        ({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}, "has no token", "sa/token"),
    ],
)
def test_in_cluster_kubeconfig_says_what_is_missing(
    tmp_path: Path, environ: dict[str, str], missing: str, where: str
) -> None:
    (tmp_path / "sa").mkdir()
    with pytest.raises(ConfigError) as caught:
        in_cluster_kubeconfig(str(tmp_path / "sa"), environ)
    assert missing in caught.value.what
    assert caught.value.where.endswith(where)
    assert "--kubeconfig" in caught.value.fix


def test_in_cluster_credentials_without_a_kubeconfig(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    account = service_account(tmp_path / "sa")
    monkeypatch.setattr(config, "SERVICE_ACCOUNT_DIR", str(account))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    loaded = load_configuration()
    assert (loaded.host, loaded.ca_file, loaded.authorization()) == (
        "https://[fd00::1]:443",
        str(account / "ca.crt"),
        "Bearer first",
    )
    (account / "token").write_text("")
    with pytest.raises(ConfigError) as caught:
        load_configuration()
    assert caught.value.where == str(account / "token")
    assert "the service account's token is missing or empty" in caught.value.what
