"""An asyncio client of the Kubernetes API: JSON requests and watches, each answer or failure the same
whichever transport carries it.

The event loop's own kept-alive HTTP/1.1 connections (``keepalive``) carry every request of a configuration
they can speak for (a server over http or https, its CA, a token, a token file or a client certificate); the
official ``kubernetes`` client (``official``), imported only then, carries those of a proxy, from worker
threads. Objects travel as plain JSON dicts: they are wire documents, and keeping them untyped lets one
code path read any API version, fields the client library does not know included.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from concurrent.futures import Executor
from typing import Any, Protocol
from urllib.parse import quote, urlencode

import attrs

from kubelet_dra.peers.errors import KubeletDRAError
from kubelet_dra.peers.kube import keepalive
from kubelet_dra.peers.kube.apiconfig import ApiConfig, NoAnswer
from kubelet_dra.peers.kube.config import load_configuration

DEFAULT_TIMEOUT = 30.0
"""Seconds one request may take, connection included (client-go has no default; 30 s is kubectl's order)."""

WATCH_TIMEOUT = 300
"""Seconds the server keeps one watch open; callers re-list and watch again afterwards."""


class KubeApiError(KubeletDRAError):
    """An API request failed: HTTP ``code`` (0 when no answer came) with the server's Status reason and message."""

    def __init__(self, code: int, reason: str, message: str, *, where: str = "") -> None:
        super().__init__(message, where=where)
        self.code = code
        self.reason = reason
        self.message = message

    @property
    def not_found(self) -> bool:
        return self.code == 404

    @property
    def forbidden(self) -> bool:
        """403: these credentials may not do this (a node's own may not list every claim, say)."""
        return self.code == 403

    @property
    def conflict(self) -> bool:
        """409: the object already exists, or it changed since it was read."""
        return self.code == 409

    @property
    def expired(self) -> bool:
        """The resourceVersion a watch started from is too old (410 Gone): list again."""
        return self.code == 410


@attrs.frozen
class WatchEvent:
    type: str
    """ADDED, MODIFIED, DELETED or BOOKMARK."""
    object: dict[str, Any]


def api_path(group: str, version: str, plural: str, *, namespace: str | None = None, name: str | None = None) -> str:
    """The REST path of a collection or object: ``/api/v1/...`` for the core group, ``/apis/<g>/<v>/...`` else."""
    parts = ["/api", version] if not group else ["/apis", group, version]
    if namespace is not None:
        parts += ["namespaces", quote(namespace, safe="")]
    parts.append(plural)
    if name is not None:
        parts.append(quote(name, safe=""))
    return "/".join(parts)


def object_key(obj: Mapping[str, Any]) -> str:
    """``namespace/name`` of an object, as the kubelet's logs and messages name it (klog's ``KObj``)."""
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def status_error(status: dict[str, Any], code: int, where: str) -> KubeApiError:
    """The error a Status document (or a non-Status error body) describes."""
    return KubeApiError(
        int(status.get("code") or code),
        str(status.get("reason") or ""),
        str(status.get("message") or f"HTTP {code}"),
        where=where,
    )


class Transport(Protocol):
    """What carries the requests: ``keepalive.KeepAlive``, or ``official.OfficialTransport`` for a proxy."""

    async def request(
        self, method: str, target: str, body: bytes | None, content_type: str, executor: Executor | None
    ) -> tuple[int, str, bytes]: ...

    async def stream(self, target: str, read_timeout: float) -> keepalive.Stream: ...

    def close(self) -> None: ...


class KubeClient:
    """Async JSON requests and watches against one API server."""

    def __init__(self, config: ApiConfig, *, timeout: float = DEFAULT_TIMEOUT, connections: int | None = None) -> None:
        """``connections``: how many requests go out at once from this client's callers; the connections kept
        open for reuse. On the official client's path a request beyond the pool's size (the library's default:
        five per CPU) opens a connection, and a TLS handshake on both sides, and drops it afterwards."""
        self._config = config
        self._timeout = timeout
        self._transport: Transport
        if keepalive.supported(config):
            self._transport = keepalive.KeepAlive(config, timeout=timeout, connections=connections)
        else:
            from kubelet_dra.peers.kube import official  # the package's import is paid only where it is needed

            self._transport = official.OfficialTransport(config, timeout=timeout, connections=connections)

    @classmethod
    def from_kubeconfig(
        cls, kubeconfig: str | None = None, *, timeout: float = DEFAULT_TIMEOUT, connections: int | None = None
    ) -> KubeClient:
        """A client for the server ``kubeconfig`` names (default: in-cluster, then kubectl's default file)."""
        return cls(load_configuration(kubeconfig), timeout=timeout, connections=connections)

    @property
    def host(self) -> str:
        return self._config.host

    def close(self) -> None:
        self._transport.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        executor: Executor | None = None,
    ) -> dict[str, Any]:
        """Send one request and return the decoded JSON answer; any non-2xx answer raises ``KubeApiError``.

        ``executor``: a queue of their own for a kind of request that must not wait behind the others (a node's
        heartbeat behind its pods' requests): its own kept connections, or on the official path its threads
        (default: the loop's)."""
        data = None if body is None else json.dumps(body).encode()
        try:
            status, reason, answer = await self._transport.request(
                method, _target(path, query), data, content_type, executor
            )
        except NoAnswer as err:
            raise self._unreachable(err, path) from err
        if not 200 <= status <= 299:
            raise _error_of(status, reason, answer, f"{method} {path}")
        return _decode(answer)

    async def get(self, path: str, query: dict[str, str] | None = None) -> dict[str, Any]:
        """``request("GET", ...)``: the hot path of a pod's preparation (its claim reads)."""
        return await self.request("GET", path, query=query)

    async def watch(self, path: str, query: dict[str, str] | None = None) -> AsyncGenerator[WatchEvent, None]:
        """Events of a watch on the collection at ``path`` until the server ends it.

        Use it inside ``contextlib.aclosing``: closing the generator aborts the HTTP stream. An ERROR event
        raises ``KubeApiError`` (410 = expired).
        """
        query = {"timeoutSeconds": str(WATCH_TIMEOUT), **(query or {}), "watch": "true"}
        try:
            stream = await self._transport.stream(_target(path, query), WATCH_TIMEOUT + self._timeout)
        except NoAnswer as err:
            raise self._unreachable(err, path) from err
        try:
            if not 200 <= stream.status <= 299:
                answer = b"".join([chunk async for chunk in stream.chunks])
                raise _error_of(stream.status, stream.reason, answer, f"GET {path}")
            async for line in _lines(stream.chunks):
                event = json.loads(line)
                if event.get("type") == "ERROR":
                    raise status_error(event.get("object") or {}, 500, path)
                yield WatchEvent(str(event.get("type")), event.get("object") or {})
        except NoAnswer as err:
            raise KubeApiError(0, "", f"watch stream broke: {err.what}", where=path) from err
        finally:
            stream.close()

    def _unreachable(self, err: NoAnswer, path: str) -> KubeApiError:
        return KubeApiError(0, "", f"cannot reach the API server at {self.host}: {err.what}", where=path)


def _target(path: str, query: Mapping[str, str] | None) -> str:
    return path + (f"?{urlencode(query)}" if query else "")


def _decode(body: bytes) -> dict[str, Any]:
    """The JSON document of an answer (an empty body is an empty document, as the official client read it)."""
    document: dict[str, Any] = json.loads(body) if body else {}
    return document


def _error_of(code: int, reason: str, body: bytes, where: str) -> KubeApiError:
    """The error of a non-2xx answer: its Status document, else its text, else the HTTP status line."""
    text = body.decode("utf-8", "replace")
    try:
        status = json.loads(text)
    except ValueError:
        status = None
    if not isinstance(status, dict):
        status = {"message": text.strip() or f"HTTP {code} {reason}"}
    return status_error(status, code, where)


async def _lines(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The non-empty lines of a stream (a watch's events, one JSON document a line)."""
    pending = b""
    async for chunk in chunks:
        pending += chunk
        *complete, pending = pending.split(b"\n")
        for line in complete:
            if line.strip():
                yield line
    if pending.strip():
        yield pending
