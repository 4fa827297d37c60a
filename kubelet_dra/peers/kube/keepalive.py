"""GETs over connections the event loop keeps alive, with the official client's TLS and credentials.

The official client sends each request from a worker thread through urllib3: on the pod's prepare
path (one ResourceClaim GET per claim) the thread hop and urllib3's per-request work cost more than
the API server's answer, where client-go keeps an HTTP/2 connection open. Here the event loop keeps
HTTP/1.1 connections itself (``http1``; an ``aiohttp`` session did the same with 0.6 ms more per GET
in a pod's prepare, as measured on a 2-core machine); everything it knows comes from the same
``Configuration`` the official client uses: the server, the CA (or no verification when the
kubeconfig says so), the TLS server name, a client certificate, and the bearer token, asked for on
every request so that a rotated token file or the in-cluster refresh is honoured exactly as the
official client honours it. A configuration with a proxy keeps the official client's path.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import ssl
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlencode, urlsplit

import attrs
from kubernetes.client import Configuration

from kubelet_dra.peers.errors import ConfigError, KubeletDRAError
from kubelet_dra.peers.kube import http1

USER_AGENT = "kubelet-dra"
DEFAULT_CONNECTIONS = 10


class KeepAliveError(KubeletDRAError):
    """No answer came (connection refused, TLS failure, timeout); the text says which."""


def supported(configuration: Configuration) -> bool:
    """Whether this transport can speak for ``configuration`` exactly as the official client would."""
    return not configuration.proxy and urlsplit(str(configuration.host)).scheme in ("http", "https")


def ssl_context(configuration: Configuration) -> ssl.SSLContext | bool:
    """The TLS settings of ``configuration``: its CA (else the system's), its client certificate, or none
    at all when it turns verification off (``insecure-skip-tls-verify``)."""
    if urlsplit(str(configuration.host)).scheme != "https":
        return False
    return _context(
        configuration.ssl_ca_cert or None,
        bool(configuration.verify_ssl),
        configuration.cert_file or None,
        configuration.key_file or None,
    )


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


class KeepAliveReader:
    """JSON GETs of one API server over connections kept open by the running event loop.

    Idle connections wait in a pool of at most ``connection_pool_maxsize``, as many as GETs may run at
    once. A kept connection the server closed meanwhile is replaced once, transparently (a GET can be
    sent again). The pool belongs to one event loop: a reader used from another loop starts a new one.
    """

    def __init__(self, configuration: Configuration, *, timeout: float) -> None:
        self._configuration = configuration
        url = urlsplit(str(configuration.host))
        self._address = (url.hostname or "localhost", url.port or (443 if url.scheme == "https" else 80))
        self._authority = url.netloc
        self._prefix = url.path.rstrip("/")
        self._ssl = ssl_context(configuration)
        self._server_name = (configuration.tls_server_name or url.hostname) if self._ssl else None
        self._timeout = timeout
        self._connections = int(configuration.connection_pool_maxsize or DEFAULT_CONNECTIONS)
        self._idle: list[_Stream] = []
        self._slots: asyncio.Semaphore | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._fixed_headers: dict[str, str] | None = None
        if configuration.refresh_api_key_hook is None:  # the credentials never change: build the headers once
            self._fixed_headers = self._headers()

    async def get(self, path: str, query: dict[str, str]) -> tuple[int, str, bytes]:
        """HTTP status, reason and body of ``GET path``; ``KeepAliveError`` when no answer came."""
        target = self._prefix + path + (f"?{urlencode(query)}" if query else "")
        data = http1.request(target, self._authority, self._headers())
        try:
            async with self._slot(), asyncio.timeout(self._timeout):
                answer = await self._exchange(data)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as err:
            raise KeepAliveError(_reason(err), where=path) from err
        return answer.status, answer.reason, answer.body

    def close(self) -> None:
        """Drop the kept connections (from any thread; their loop may already be gone)."""
        idle, self._idle = self._idle, []
        for stream in idle:
            stream.drop()

    @contextlib.asynccontextmanager
    async def _slot(self) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        if self._loop is not loop or self._slots is None:
            self.close()
            self._loop, self._slots = loop, asyncio.Semaphore(self._connections)
        async with self._slots:
            yield

    async def _exchange(self, data: bytes) -> http1.Answer:
        stream = self._idle.pop() if self._idle else None
        if stream is not None:
            try:
                answer = await http1.exchange(stream.reader, stream.writer, data)
            except (asyncio.IncompleteReadError, ConnectionError) as err:
                stream.drop()
                if isinstance(err, asyncio.IncompleteReadError) and err.partial:
                    raise
                stream = None  # closed by the server while it idled: once more on a new connection
            else:
                return self._keep(stream, answer)
        reader, writer = await asyncio.open_connection(
            *self._address, ssl=self._ssl or None, server_hostname=self._server_name, limit=http1.HEADER_LIMIT
        )
        stream = _Stream(reader, writer)
        try:
            answer = await http1.exchange(reader, writer, data)
        except BaseException:
            stream.drop()
            raise
        return self._keep(stream, answer)

    def _keep(self, stream: _Stream, answer: http1.Answer) -> http1.Answer:
        if answer.reusable:
            self._idle.append(stream)
        else:
            stream.drop()
        return answer

    def _headers(self) -> dict[str, str]:
        if self._fixed_headers is not None:
            return self._fixed_headers
        headers = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        # auth_settings() runs the configuration's refresh hook (a token file read again, in-cluster refresh);
        # a bearer token is the one setting the library has.
        bearer = self._configuration.auth_settings().get("BearerToken")
        if bearer is not None and bearer["in"] == "header" and bearer["value"]:
            headers[bearer["key"]] = bearer["value"]
        return headers


@attrs.frozen
class _Stream:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter

    def drop(self) -> None:
        with contextlib.suppress(RuntimeError):  # its loop is closed: the socket goes with the objects
            self.writer.transport.abort()


def _reason(err: BaseException) -> str:
    if isinstance(err, asyncio.IncompleteReadError):
        return "the server closed the connection before its answer was complete"
    if isinstance(err, TimeoutError):
        return "no answer within the request timeout"
    return str(err) or type(err).__name__


def decode(body: bytes) -> dict[str, Any]:
    """The JSON document of an answer (an empty body is an empty document, as the official path reads it)."""
    return json.loads(body) if body else {}
