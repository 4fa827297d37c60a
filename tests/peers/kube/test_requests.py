"""Every verb and watches over the kept-alive connections to the embedded API server (HTTPS, its CA and
tokens), a client certificate presented to a server that demands one, and the official client's paths: an
exec plugin's kubeconfig (loaded by the library, its token renewed) and a proxy (requests sent by it)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from kubeconfigs import client_certificate, exec_kubeconfig, kubeconfig
from nodeenv import unique

from kubelet_dra.peers.apiserver.tls import ensure_certificates
from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path
from kubelet_dra.peers.kube.config import load_configuration
from kubelet_dra.workbench.testbed.serverthread import ServerThread

CONFIGMAPS = api_path("", "v1", "configmaps", namespace="default")


@pytest.fixture
async def client(apiserver: ServerThread) -> AsyncIterator[KubeClient]:
    kube = KubeClient.from_kubeconfig(str(apiserver.kubeconfig))
    yield kube
    kube.close()


async def verbs(kube: KubeClient) -> None:
    """Create, read, replace, patch and delete one ConfigMap, each answer the server's."""
    name = unique("cm")
    created = await kube.request("POST", CONFIGMAPS, body={"metadata": {"name": name}, "data": {"a": "1"}})
    assert created["data"] == {"a": "1"} and created["metadata"]["uid"]
    path = f"{CONFIGMAPS}/{name}"
    assert (await kube.get(path))["metadata"]["uid"] == created["metadata"]["uid"]
    replaced = await kube.request("PUT", path, body={**created, "data": {"a": "2"}})
    assert replaced["data"] == {"a": "2"}
    patch = {"data": {"b": "3"}}
    patched = await kube.request("PATCH", path, body=patch, content_type="application/merge-patch+json")
    assert patched["data"] == {"a": "2", "b": "3"}
    listed = await kube.request("GET", CONFIGMAPS, query={"fieldSelector": f"metadata.name={name}"})
    assert [item["data"] for item in listed["items"]] == [{"a": "2", "b": "3"}]
    await kube.request("DELETE", path)
    with pytest.raises(KubeApiError) as caught:
        await kube.get(path)
    assert (caught.value.code, caught.value.reason) == (404, "NotFound")
    assert caught.value.message == f'configmaps "{name}" not found'


async def test_every_verb_answers_as_the_server_says(client: KubeClient) -> None:
    await verbs(client)


async def test_an_error_status_of_a_write_is_an_api_error(client: KubeClient) -> None:
    name = unique("cm")
    await client.request("POST", CONFIGMAPS, body={"metadata": {"name": name}})
    with pytest.raises(KubeApiError) as caught:
        await client.request("POST", CONFIGMAPS, body={"metadata": {"name": name}})
    assert (caught.value.code, caught.value.reason) == (409, "AlreadyExists")
    assert caught.value.message == f'configmaps "{name}" already exists'
    assert caught.value.conflict
    await client.request("DELETE", f"{CONFIGMAPS}/{name}")


async def watched(kube: KubeClient, apiserver: ServerThread) -> list[tuple[str, str]]:
    """The events of a watch while one ConfigMap is created, changed and deleted; then the watch is closed
    with the stream still open, and the server's count of open watches goes back down."""
    name = unique("cm")
    version = (await kube.get(CONFIGMAPS))["metadata"]["resourceVersion"]
    seen: list[tuple[str, str]] = []
    watches = apiserver.server.open_watches
    events = kube.watch(CONFIGMAPS, {"resourceVersion": version, "fieldSelector": f"metadata.name={name}"})
    async with contextlib.aclosing(events):
        await kube.request("POST", CONFIGMAPS, body={"metadata": {"name": name}})
        await kube.request(
            "PATCH", f"{CONFIGMAPS}/{name}", body={"data": {"a": "1"}}, content_type="application/merge-patch+json"
        )
        await kube.request("DELETE", f"{CONFIGMAPS}/{name}")
        async for event in events:
            seen.append((event.type, event.object["metadata"]["name"]))
            if event.type == "DELETED":
                break
    async with asyncio.timeout(10):
        while apiserver.server.open_watches > watches:
            await asyncio.sleep(0.02)
    return seen


async def test_a_watch_yields_the_events_and_closing_it_ends_the_stream(
    client: KubeClient, apiserver: ServerThread
) -> None:
    seen = await watched(client, apiserver)
    assert [kind for kind, _ in seen] == ["ADDED", "MODIFIED", "DELETED"]


async def test_an_error_event_of_a_watch_raises_with_its_status(tmp_path: Path) -> None:
    server = ServerThread(tmp_path, history_size=3).start()
    kube = KubeClient.from_kubeconfig(str(server.kubeconfig))
    try:
        for _ in range(6):
            await kube.request("POST", CONFIGMAPS, body={"metadata": {"name": unique("cm")}})
        with pytest.raises(KubeApiError) as caught:
            async with contextlib.aclosing(kube.watch(CONFIGMAPS, {"resourceVersion": "1"})) as events:
                async for _ in events:
                    pass
        assert caught.value.expired and caught.value.reason == "Expired"
        assert caught.value.message.startswith("too old resource version: 1 (")
    finally:
        kube.close()
        server.stop()


async def test_a_watch_the_server_refuses_is_an_api_error(client: KubeClient) -> None:
    with pytest.raises(KubeApiError) as caught:
        async for _ in client.watch(api_path("", "v1", "nosuchthings")):
            pass
    assert caught.value.not_found


@pytest.mark.parametrize("loaded_by_the_library", [False, True])
async def test_a_rotated_token_file_is_used_by_the_next_write(
    apiserver: ServerThread, tmp_path: Path, loaded_by_the_library: bool
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(f"{apiserver.server.admin_token}\n")
    unknown = {"user__as": "someone"} if loaded_by_the_library else {}  # a field only the library reads (and ignores)
    path = kubeconfig(apiserver, tmp_path / "kc", user__token=None, user__tokenFile="token", **unknown)
    assert (load_configuration(str(path)).official is not None) == loaded_by_the_library
    kube = KubeClient.from_kubeconfig(str(path))
    try:
        name = unique("cm")
        await kube.request("POST", CONFIGMAPS, body={"metadata": {"name": name}})
        token_file.write_text("revoked\n")
        with pytest.raises(KubeApiError) as caught:
            await kube.request("DELETE", f"{CONFIGMAPS}/{name}")
        assert caught.value.code == 401
        token_file.write_text(f"{apiserver.server.admin_token}\n")
        await kube.request("DELETE", f"{CONFIGMAPS}/{name}")
    finally:
        kube.close()


@contextlib.asynccontextmanager
async def server_demanding_a_certificate(pki: Path, client_ca: bytes) -> AsyncIterator[str]:
    """An HTTPS server that refuses a client without a certificate ``client_ca`` signed, and answers each GET
    with the common name of the certificate it was shown."""
    serving = ensure_certificates(pki, ["127.0.0.1"])
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(serving.cert_path, serving.key_path)
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(cadata=client_ca.decode())

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError):
            while await reader.readuntil(b"\r\n\r\n"):
                subject = dict(pair[0] for pair in writer.get_extra_info("peercert")["subject"])
                body = json.dumps({"kind": "Shown", "commonName": subject["commonName"]}).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)
    try:
        yield f"https://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()


async def test_a_client_certificate_is_presented(apiserver: ServerThread, tmp_path: Path) -> None:
    certificate, key = client_certificate("system:node:cert-node")
    (tmp_path / "client.key").write_bytes(key)
    async with server_demanding_a_certificate(tmp_path / "pki", certificate) as url:
        path = kubeconfig(
            apiserver,
            tmp_path / "kc",
            cluster__server=url,
            cluster__certificate_authority_data=None,
            cluster__certificate_authority=str(tmp_path / "pki" / "ca.crt"),
            user__token=None,
            user__client_certificate_data=base64.b64encode(certificate).decode(),
            user__client_key="client.key",
        )
        kube = KubeClient.from_kubeconfig(str(path))
        try:
            assert (await kube.get("/shown"))["commonName"] == "system:node:cert-node"
        finally:
            kube.close()
        without = KubeClient.from_kubeconfig(str(kubeconfig(apiserver, tmp_path / "kc2", cluster__server=url)))
        try:
            with pytest.raises(KubeApiError) as caught:
                await without.get("/shown")
            assert caught.value.code == 0
        finally:
            without.close()


async def test_an_exec_plugin_kubeconfig_is_loaded_by_the_official_client(
    apiserver: ServerThread, tmp_path: Path
) -> None:
    path = exec_kubeconfig(apiserver, tmp_path, apiserver.server.admin_token)
    assert load_configuration(str(path)).official is not None
    kube = KubeClient.from_kubeconfig(str(path))
    try:
        await verbs(kube)
    finally:
        kube.close()
    refused = KubeClient.from_kubeconfig(str(exec_kubeconfig(apiserver, tmp_path, "not-a-token")))
    try:
        with pytest.raises(KubeApiError) as caught:
            await refused.get(CONFIGMAPS)
        assert caught.value.code == 401
    finally:
        refused.close()


@contextlib.asynccontextmanager
async def connect_proxy() -> AsyncIterator[tuple[str, list[str]]]:
    """An HTTP proxy that tunnels CONNECT requests, and the targets it was asked for."""
    targets: list[str] = []

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        method, target, _ = head.split(" ", 2)
        assert method == "CONNECT"
        targets.append(target)
        host, port = target.rsplit(":", 1)
        upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", targets
    finally:
        server.close()


async def test_a_proxy_is_the_official_clients_to_go_through(apiserver: ServerThread, tmp_path: Path) -> None:
    async with connect_proxy() as (proxy, targets):
        kube = KubeClient.from_kubeconfig(str(kubeconfig(apiserver, tmp_path / "kc", cluster__proxy_url=proxy)))
        try:
            await verbs(kube)
            seen = await watched(kube, apiserver)
            assert [kind for kind, _ in seen] == ["ADDED", "MODIFIED", "DELETED"]
        finally:
            kube.close()
    assert targets and set(targets) == {apiserver.url.split("://", 1)[1]}
