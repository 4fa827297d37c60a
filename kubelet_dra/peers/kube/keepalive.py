"""Requests over connections the event loop keeps alive, with the TLS and credentials of an ``ApiConfig``.

The official client sends each request from a worker thread through urllib3: on the pod's prepare
path (one ResourceClaim GET per claim) the thread hop and urllib3's per-request work cost more than
the API server's answer, where client-go keeps an HTTP/2 connection open. Here the event loop keeps
HTTP/1.1 connections itself (``http1``; an ``aiohttp`` session did the same with 0.6 ms more per GET
in a pod's prepare, as measured on a 2-core machine), for every verb, and opens one connection per
watch, read as its events come. What it knows comes from the ``ApiConfig``: the server, the CA (or no
verification when the kubeconfig says so), the TLS server name, a client certificate, and the
Authorization header, asked for on every request so that a rotated token file or a renewed exec
token is honoured. A configuration with a proxy is the official client's (``official``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ssl
from collections.abc import AsyncIterator, Callable
from urllib.parse import urlsplit

import attrs

from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.peers.kube import http1
from kubelet_dra.peers.kube.apiconfig import ApiConfig, NoAnswer

USER_AGENT = "kubelet-dra"
DEFAULT_CONNECTIONS = 10
_NO_ANSWER = (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError)


def supported(config: ApiConfig) -> bool:
    """Whether this transport can speak for ``config`` exactly as the official client would."""
    return not config.proxy and urlsplit(config.host).scheme in ("http", "https")


def ssl_context(config: ApiConfig) -> ssl.SSLContext | bool:
    """The TLS settings of ``config``: its CA (else the system's), its client certificate, or none at all when
    it turns verification off (``insecure-skip-tls-verify``)."""
    if urlsplit(config.host).scheme != "https":
        return False
    return _context(config.ca_file, config.verify, config.cert_file, config.key_file)


@functools.lru_cache(maxsize=64)
def _context(ca_file: str | None, verify: bool, cert_file: str | None, key_file: str | None) -> ssl.SSLContext:
    """One context per set of TLS files: the nodes of one process share a CA store instead of loading one each.

    A file that holds no certificate (an empty ``ca.crt``, as a cluster without a root CA publishes) is the
    user's to fix, named, rather than a traceback."""
    loading = ca_file
    try:
        context = ssl.create_default_context(cafile=ca_file)
        if not verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        if cert_file:
            loading = cert_file
            context.load_cert_chain(cert_file, key_file)
    except ssl.SSLError as err:
        raise ConfigError(
            f"no usable certificate in the file: {err.reason or err}",
            where=str(loading),
            fix="give the API server's CA certificate in PEM (in a pod: the cluster's kube-root-ca.crt ConfigMap),"
            " and a client certificate with its key",
        ) from err
    return context


@attrs.frozen
class Stream:
    """An answer whose body is still coming (a watch): its status, its body's pieces, and how to abort it."""

    status: int
    reason: str
    chunks: AsyncIterator[bytes]
    close: Callable[[], None]


class KeepAlive:
    """Requests to one API server over connections kept open by the running event loop.

    Idle connections wait in a pool of at most ``connections``, as many as requests may run at once. A kept
    connection the server closed while it idled (no byte of an answer came) is replaced once, transparently:
    the server never read the request. The requests of a caller's ``executor`` (a node's heartbeats) have a
    pool of their own, so they never wait behind the others. A pool belongs to one event loop: a client used
    from another loop starts a new one.
    """

    def __init__(self, config: ApiConfig, *, timeout: float, connections: int | None = None) -> None:
        self._config = config
        url = urlsplit(config.host)
        self._address = (url.hostname or "localhost", url.port or (443 if url.scheme == "https" else 80))
        self._authority = url.netloc
        self._prefix = url.path.rstrip("/")
        self._ssl = ssl_context(config)
        self._server_name = (config.server_name or url.hostname) if self._ssl else None
        self._timeout = timeout
        self._connections = connections or DEFAULT_CONNECTIONS
        self._pools: dict[object, _Pool] = {}
        self._fixed_headers: dict[str, str] | None = None
        if config.fixed:  # the credentials never change: build the headers once
            self._fixed_headers = self._headers()

    async def request(
        self, method: str, target: str, body: bytes | None, content_type: str, executor: object = None
    ) -> tuple[int, str, bytes]:
        """HTTP status, reason and body of ``method target``; ``NoAnswer`` when no answer came."""
        data = http1.request(method, self._prefix + target, self._authority, self._headers(body, content_type), body)
        pool = self._pool(executor)
        try:
            async with pool.slots:  # the timeout starts with the request, not in the queue (as in a thread pool's)
                async with asyncio.timeout(self._timeout):
                    answer = await self._exchange(pool, data)
        except _NO_ANSWER as err:
            raise NoAnswer(_reason(err), where=target) from err
        return answer.status, answer.reason, answer.body

    async def stream(self, target: str, read_timeout: float) -> Stream:
        """The answer of ``GET target`` on a connection of its own, its body read as it comes (each read within
        ``read_timeout``); the connection is closed with the stream."""
        data = http1.request("GET", self._prefix + target, self._authority, self._headers())
        try:
            async with asyncio.timeout(self._timeout):
                reader, writer = await self._connect()
                try:
                    writer.write(data)
                    head = await http1.head(reader)
                except BaseException:
                    _abort(writer)
                    raise
        except _NO_ANSWER as err:
            raise NoAnswer(_reason(err), where=target) from err

        async def chunks() -> AsyncIterator[bytes]:
            pieces = http1.body(reader, head)
            while True:
                try:
                    async with asyncio.timeout(read_timeout):
                        piece = await anext(pieces)
                except StopAsyncIteration:
                    return
                except _NO_ANSWER as err:
                    raise NoAnswer(f"the stream broke: {_reason(err)}", where=target) from err
                yield piece

        return Stream(head.status, head.reason, chunks(), functools.partial(_abort, writer))

    def close(self) -> None:
        """Drop the kept connections (from any thread; their loop may already be gone)."""
        for pool in self._pools.values():
            pool.close()

    def _pool(self, executor: object) -> _Pool:
        loop = asyncio.get_running_loop()
        pool = self._pools.get(executor)
        if pool is None or pool.loop is not loop:
            if pool is not None:
                pool.close()
            pool = self._pools[executor] = _Pool(loop, asyncio.Semaphore(self._connections))
        return pool

    async def _exchange(self, pool: _Pool, data: bytes) -> http1.Answer:
        while pool.idle:
            reader, writer = pool.idle.pop()
            if reader.at_eof():  # the server closed it while it idled, and the loop has seen that
                _abort(writer)
                continue
            try:
                answer = await http1.exchange(reader, writer, data)
            except (asyncio.IncompleteReadError, ConnectionError) as err:
                _abort(writer)
                if isinstance(err, asyncio.IncompleteReadError) and err.partial:
                    raise
                break  # closed by the server while it idled: once more on a new connection
            return pool.keep(reader, writer, answer)
        reader, writer = await self._connect()
        try:
            answer = await http1.exchange(reader, writer, data)
        except BaseException:
            _abort(writer)
            raise
        return pool.keep(reader, writer, answer)

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(
            *self._address, ssl=self._ssl or None, server_hostname=self._server_name, limit=http1.HEADER_LIMIT
        )

    def _headers(self, body: bytes | None = None, content_type: str = "") -> dict[str, str]:
        headers = self._fixed_headers
        if headers is None:
            headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
            if (authorization := self._config.authorization()) is not None:
                headers["Authorization"] = authorization
        return headers if body is None else {**headers, "Content-Type": content_type}


@attrs.define
class _Pool:
    """The kept connections of one queue (the default, or a caller's executor) in one event loop, and the slots
    of its requests in flight."""

    loop: asyncio.AbstractEventLoop
    slots: asyncio.Semaphore
    idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = attrs.Factory(list)

    def keep(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, answer: http1.Answer) -> http1.Answer:
        if answer.reusable:
            self.idle.append((reader, writer))
        else:
            _abort(writer)
        return answer

    def close(self) -> None:
        idle, self.idle = self.idle, []
        for _, writer in idle:
            _abort(writer)


def _abort(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(RuntimeError):  # its loop is closed: the socket goes with the objects
        writer.transport.abort()


def _reason(err: BaseException) -> str:
    if isinstance(err, asyncio.IncompleteReadError):
        return "the server closed the connection before its answer was complete"
    if isinstance(err, TimeoutError):
        return "no answer within the request timeout"
    return str(err) or type(err).__name__
