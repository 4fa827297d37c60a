"""The kept-alive GET's HTTP/1.1 against a server that answers byte for byte as HTTP allows: chunked bodies
with trailers, bodies ended by the connection, interim answers, a kept connection closed while it idled,
and bytes that are not HTTP at all. The API server's own answers are held to the official client in
test_keepalive.py and, against the real kube-apiserver, in the interop tier."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable

import pytest

from kubelet_dra.peers.kube.apiconfig import ApiConfig
from kubelet_dra.peers.kube.client import KubeApiError, KubeClient

Answer = Callable[[int], bytes]
"""The bytes to send for the n-th request on a connection (from 0)."""

DOCUMENT = {"kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "default"}}
BODY = json.dumps(DOCUMENT).encode()


def sized(body: bytes = BODY, extra: str = "") -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{extra}\r\n".encode() + body


class Server:
    """Answers each request line with ``answer(n)``; ``close_after`` requests, it closes the connection."""

    def __init__(self, answer: Answer, close_after: int | None = None) -> None:
        self.answer = answer
        self.close_after = close_after
        self.connections = 0
        self.requests: list[bytes] = []
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> Server:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        served = 0
        try:
            while served != self.close_after:
                head = await reader.readuntil(b"\r\n\r\n")
                self.requests.append(head)
                writer.write(self.answer(served))
                await writer.drain()
                served += 1
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()


@pytest.fixture
async def client_of() -> AsyncIterator[Callable[[Server], KubeClient]]:
    clients: list[KubeClient] = []

    def make(server: Server) -> KubeClient:
        clients.append(KubeClient(ApiConfig(server.url, token="t0ken"), timeout=5))
        return clients[-1]

    yield make
    for client in clients:
        client.close()


async def test_a_kept_connection_carries_every_get_with_the_token(client_of: Callable[[Server], KubeClient]) -> None:
    async with Server(lambda n: sized()) as server:
        client = client_of(server)
        answers = [await client.get("/apis/x", query={"labelSelector": "a=b c"}) for _ in range(3)]
    assert answers == [DOCUMENT] * 3
    assert server.connections == 1
    first = server.requests[0].decode()
    assert first.startswith("GET /apis/x?labelSelector=a%3Db+c HTTP/1.1\r\n")
    assert "authorization: bearer t0ken\r\n" in first.lower() and "Accept: application/json\r\n" in first


async def test_a_chunked_body_with_trailers_is_joined(client_of: Callable[[Server], KubeClient]) -> None:
    half = len(BODY) // 2
    chunks = f"{half:x};ext=1\r\n".encode() + BODY[:half] + f"\r\n{len(BODY) - half:X}\r\n".encode()
    head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    answer = head + chunks + BODY[half:] + b"\r\n0\r\nX-T: 1\r\n\r\n"
    async with Server(lambda n: answer) as server:
        client = client_of(server)
        assert await client.get("/a") == DOCUMENT
        assert await client.get("/a") == DOCUMENT
    assert server.connections == 1


async def test_a_body_ended_by_the_connection_and_interim_answers(client_of: Callable[[Server], KubeClient]) -> None:
    answer = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + BODY
    async with Server(lambda n: answer, close_after=1) as server:
        client = client_of(server)
        assert await client.get("/a") == DOCUMENT
        assert await client.get("/a") == DOCUMENT
    assert server.connections == 2


async def test_a_connection_the_server_closed_while_idle_is_replaced(client_of: Callable[[Server], KubeClient]) -> None:
    async with Server(lambda n: sized(), close_after=1) as server:
        client = client_of(server)
        for _ in range(3):
            assert await client.get("/a") == DOCUMENT
            await asyncio.sleep(0.05)  # the server's close reaches the kept connection
    assert server.connections == 3


async def test_an_error_answer_is_the_servers_status(client_of: Callable[[Server], KubeClient]) -> None:
    status = {"kind": "Status", "status": "Failure", "reason": "NotFound", "message": 'x "c" not found', "code": 404}
    body = json.dumps(status).encode()
    answer = f"HTTP/1.1 404 Not Found\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body
    async with Server(lambda n: answer) as server:
        with pytest.raises(KubeApiError) as caught:
            await client_of(server).get("/a")
    assert (caught.value.code, caught.value.reason, caught.value.message) == (404, "NotFound", 'x "c" not found')


@pytest.mark.parametrize(
    ("answer", "words"),
    [
        (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "not an HTTP/1.1 status line: 'SSH-2.0-OpenSSH_9.6'"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n", "not a body length: 'ten'"),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 999\r\n\r\n{}",
            "the server closed the connection before its answer was complete",
        ),
    ],
)
async def test_an_answer_that_is_not_http_is_named(
    client_of: Callable[[Server], KubeClient], answer: bytes, words: str
) -> None:
    async with Server(lambda n: answer, close_after=1) as server:
        with pytest.raises(KubeApiError) as caught:
            await client_of(server).get("/a")
        assert caught.value.message == f"cannot reach the API server at {server.url}: {words}"
    assert caught.value.code == 0
