"""Requests over the kept-alive connection: the official client's TLS, token and errors, against the embedded
API server over HTTPS (its CA, its tokens), answer for answer the same as the official client's."""

from __future__ import annotations

import asyncio
import base64
import threading
from pathlib import Path

import pytest
from kubeconfigs import kubeconfig, official_get

from kubelet_dra.peers.apiserver.tls import ensure_certificates
from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path
from kubelet_dra.workbench.testbed.serverthread import ServerThread

NAMESPACES = api_path("", "v1", "namespaces")


async def test_a_get_answers_as_the_official_client_does(apiserver: ServerThread) -> None:
    client = KubeClient.from_kubeconfig(str(apiserver.kubeconfig))
    try:
        path = api_path("", "v1", "namespaces", name="default")
        fast, (status, slow) = await client.get(path), await asyncio.to_thread(official_get, apiserver.kubeconfig, path)
        assert (status, fast) == (200, slow)
        assert fast["metadata"]["name"] == "default"
        listed = await client.get(NAMESPACES, query={"labelSelector": "kubernetes.io/metadata.name=default"})
        assert [item["metadata"]["name"] for item in listed["items"]] == ["default"]
    finally:
        client.close()


async def test_errors_carry_the_status_of_the_server(apiserver: ServerThread) -> None:
    client = KubeClient.from_kubeconfig(str(apiserver.kubeconfig))
    try:
        with pytest.raises(KubeApiError) as caught:
            await client.request(
                "GET", api_path("resource.k8s.io", "v1", "resourceclaims", namespace="default", name="gone")
            )
        assert (caught.value.code, caught.value.reason) == (404, "NotFound")
        assert caught.value.message == 'resourceclaims.resource.k8s.io "gone" not found'
    finally:
        client.close()


async def test_a_wrong_token_is_the_servers_401(apiserver: ServerThread, tmp_path: Path) -> None:
    client = KubeClient.from_kubeconfig(str(kubeconfig(apiserver, tmp_path / "kc", user__token="not-a-token")))
    try:
        with pytest.raises(KubeApiError) as caught:
            await client.get(NAMESPACES)
        assert caught.value.code == 401
        assert caught.value.reason == "Unauthorized"
    finally:
        client.close()


async def test_a_token_file_is_read_again_for_every_request(apiserver: ServerThread, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("not-a-token\n")
    path = kubeconfig(apiserver, tmp_path / "kc", user__token=None, user__tokenFile=str(token_file))
    client = KubeClient.from_kubeconfig(str(path))
    try:
        with pytest.raises(KubeApiError) as caught:
            await client.get(NAMESPACES)
        assert caught.value.code == 401
        token_file.write_text(f"{apiserver.server.admin_token}\n")  # rotated, as a kubelet rotates a pod's token
        assert (await client.get(NAMESPACES))["kind"] == "NamespaceList"
    finally:
        client.close()


async def test_a_server_outside_the_ca_is_refused(apiserver: ServerThread, tmp_path: Path) -> None:
    stranger = ensure_certificates(tmp_path / "pki", ["127.0.0.1"])
    data = base64.b64encode(stranger.ca_cert_pem).decode()
    client = KubeClient.from_kubeconfig(
        str(kubeconfig(apiserver, tmp_path / "kc", cluster__certificate_authority_data=data))
    )
    try:
        with pytest.raises(KubeApiError) as caught:
            await client.get(NAMESPACES)
        assert caught.value.code == 0
        assert f"cannot reach the API server at {apiserver.url}" in caught.value.message
        assert "certificate verify failed" in caught.value.message
    finally:
        client.close()


async def test_insecure_skip_tls_verify_is_honoured(apiserver: ServerThread, tmp_path: Path) -> None:
    path = kubeconfig(
        apiserver, tmp_path / "kc", cluster__certificate_authority_data=None, cluster__insecure_skip_tls_verify=True
    )
    client = KubeClient.from_kubeconfig(str(path))
    try:
        assert (await client.get(NAMESPACES))["kind"] == "NamespaceList"
    finally:
        client.close()


def test_a_client_used_from_two_event_loops_answers_in_each(apiserver: ServerThread) -> None:
    client = KubeClient.from_kubeconfig(str(apiserver.kubeconfig))
    answers: list[str] = []

    def in_a_loop_of_its_own() -> None:
        answers.append(asyncio.run(client.get(NAMESPACES))["kind"])

    try:
        answers.append(asyncio.run(client.get(NAMESPACES))["kind"])
        thread = threading.Thread(target=in_a_loop_of_its_own)
        thread.start()
        thread.join(30)
        answers.append(asyncio.run(client.get(NAMESPACES))["kind"])
    finally:
        client.close()
    assert answers == ["NamespaceList"] * 3


async def test_an_unreachable_server_is_an_api_error_with_code_zero(apiserver: ServerThread, tmp_path: Path) -> None:
    client = KubeClient.from_kubeconfig(
        str(kubeconfig(apiserver, tmp_path / "kc", cluster__server="https://127.0.0.1:1"))
    )
    try:
        with pytest.raises(KubeApiError) as caught:
            await client.get(NAMESPACES)
        assert caught.value.code == 0
        assert caught.value.message.startswith("cannot reach the API server at https://127.0.0.1:1: ")
    finally:
        client.close()
