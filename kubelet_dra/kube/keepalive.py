"""GETs over one kept-alive connection in the event loop, with the official client's TLS and credentials.

The official client sends each request from a worker thread through urllib3: on the pod's prepare
path (one ResourceClaim GET per claim) the thread hop and urllib3's per-request work cost more than
the API server's answer, where client-go keeps an HTTP/2 connection open. Here an ``aiohttp`` session
of the event loop keeps the connection instead; everything it knows comes from the same
``Configuration`` the official client uses: the server, the CA (or no verification when the
kubeconfig says so), the TLS server name, a client certificate, and the bearer token, asked for on
every request so that a rotated token file or the in-cluster refresh is honoured exactly as the
official client honours it. A configuration with a proxy keeps the official client's path.
"""

from __future__ import annotations

import asyncio
import functools
import json
import ssl
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from kubernetes.client import Configuration

from kubelet_dra.errors import KubeletDRAError

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
    """One context per set of TLS files: the nodes of one process share a CA store instead of loading one each."""
    context = ssl.create_default_context(cafile=ca_file)
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if cert_file:
        context.load_cert_chain(cert_file, key_file)
    return context


class KeepAliveReader:
    """JSON GETs of one API server over a connection kept open by the running event loop.

    A session belongs to one event loop: a reader used from another loop opens a session there.
    """

    def __init__(self, configuration: Configuration, *, timeout: float) -> None:
        self._configuration = configuration
        self._host = str(configuration.host).rstrip("/")
        self._ssl = ssl_context(configuration)
        self._server_name = configuration.tls_server_name or None
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._connections = int(configuration.connection_pool_maxsize or DEFAULT_CONNECTIONS)
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._fixed_headers: dict[str, str] | None = None
        if configuration.refresh_api_key_hook is None:  # the credentials never change: build the headers once
            self._fixed_headers = self._headers()

    async def get(self, path: str, query: dict[str, str]) -> tuple[int, str, bytes]:
        """HTTP status, reason and body of ``GET path``; ``KeepAliveError`` when no answer came."""
        try:
            async with self._open().get(
                self._host + path,
                params=query or None,
                headers=self._headers(),
                ssl=self._ssl,
                server_hostname=self._server_name,
            ) as response:
                return response.status, str(response.reason or ""), await response.read()
        except (aiohttp.ClientError, OSError, TimeoutError) as err:
            raise KeepAliveError(str(err) or type(err).__name__, where=path) from err

    def close(self) -> None:
        """Drop the kept connection (from any thread; the session's loop may already be gone)."""
        session, self._session = self._session, None
        if session is not None and session.connector is not None:
            session.connector._close()
            session.detach()

    def _open(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        if self._session is None or self._loop is not loop or self._session.closed:
            self.close()
            # As many connections as the official client's pool keeps (``connection_pool_maxsize``).
            connector = aiohttp.TCPConnector(limit=self._connections, keepalive_timeout=60.0)
            self._session = aiohttp.ClientSession(
                connector=connector, timeout=self._timeout, headers={"User-Agent": USER_AGENT}
            )
            self._loop = loop
        return self._session

    def _headers(self) -> dict[str, str]:
        if self._fixed_headers is not None:
            return self._fixed_headers
        headers = {"Accept": "application/json"}
        # auth_settings() runs the configuration's refresh hook (a token file read again, in-cluster refresh).
        for setting in self._configuration.auth_settings().values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[str(setting["key"])] = str(setting["value"])
        return headers


def decode(body: bytes) -> dict[str, Any]:
    """The JSON document of an answer (an empty body is an empty document, as the official path reads it)."""
    return json.loads(body) if body else {}
