"""An asyncio face on the official (synchronous) ``kubernetes`` client.

Requests go through the client's own authentication, TLS and proxy handling, each in a worker
thread (``asyncio.to_thread``), so event-loop code never blocks on the network. ``get``, for the
hot path of a pod's preparation (its claim reads), takes a connection the event loop keeps alive
instead (``keepalive``), set up from the same configuration, with the same answers and errors.
Objects travel as plain JSON dicts: they are wire documents, and keeping them untyped lets one
code path read any API version, fields the client library does not know included.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import threading
from collections.abc import AsyncGenerator, Iterator, Mapping
from concurrent.futures import Executor
from typing import Any
from urllib.parse import quote

import attrs
import urllib3
from kubernetes.client import ApiClient, Configuration
from kubernetes.client.rest import RESTResponse

from kubelet_dra.peers.errors import KubeletDRAError
from kubelet_dra.peers.kube import keepalive
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


class KubeClient:
    """Async JSON requests and watches against one API server."""

    def __init__(
        self, configuration: Configuration, *, timeout: float = DEFAULT_TIMEOUT, connections: int | None = None
    ) -> None:
        """``connections``: how many requests go out at once from this client's callers (their threads); the
        connections kept open for reuse. A request beyond the pool's size (the library's default: five per CPU)
        opens a connection, and a TLS handshake on both sides, and drops it afterwards."""
        if connections is not None:
            configuration.connection_pool_maxsize = connections
        self._api = ApiClient(configuration)
        self._api.user_agent = keepalive.USER_AGENT
        self._timeout = timeout
        self._reader = (
            keepalive.KeepAliveReader(configuration, timeout=timeout) if keepalive.supported(configuration) else None
        )

    @classmethod
    def from_kubeconfig(
        cls, kubeconfig: str | None = None, *, timeout: float = DEFAULT_TIMEOUT, connections: int | None = None
    ) -> KubeClient:
        """A client for the server ``kubeconfig`` names (default: in-cluster, then kubectl's default file)."""
        return cls(load_configuration(kubeconfig), timeout=timeout, connections=connections)

    @property
    def host(self) -> str:
        return str(self._api.configuration.host)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        self._api.close()

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

        ``executor``: the threads to send it from (default: the loop's), so a kind of request that must not
        wait behind the others (a node's heartbeat behind its pods' requests) has a queue of its own."""
        if executor is None:
            return await asyncio.to_thread(self._request, method, path, query or {}, body, content_type)
        call = functools.partial(self._request, method, path, query or {}, body, content_type)
        return await asyncio.get_running_loop().run_in_executor(executor, call)

    async def get(self, path: str, query: dict[str, str] | None = None) -> dict[str, Any]:
        """``request("GET", ...)`` over the connection the event loop keeps alive: for the hot path (a pod's
        claim reads), where the hop to a worker thread costs more than the answer; same answers and errors."""
        if self._reader is None:
            return await self.request("GET", path, query=query)
        try:
            status, reason, data = await self._reader.get(path, query or {})
        except keepalive.KeepAliveError as err:
            raise KubeApiError(0, "", f"cannot reach the API server at {self.host}: {err.what}", where=path) from err
        if not 200 <= status <= 299:
            raise _error_of(status, reason, data, f"GET {path}")
        return keepalive.decode(data)

    async def watch(self, path: str, query: dict[str, str] | None = None) -> AsyncGenerator[WatchEvent, None]:
        """Events of a watch on the collection at ``path`` until the server ends it.

        Use it inside ``contextlib.aclosing``: closing the generator aborts the HTTP stream, which
        a worker thread reads line by line. An ERROR event raises ``KubeApiError`` (410 = expired).
        """
        query = {"timeoutSeconds": str(WATCH_TIMEOUT), **(query or {}), "watch": "true"}
        response = await asyncio.to_thread(
            self._send, "GET", path, query, None, "application/json", (self._timeout, WATCH_TIMEOUT + self._timeout)
        )
        raw: urllib3.BaseHTTPResponse = response.response
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[bytes | BaseException | None] = asyncio.Queue()
        thread = threading.Thread(target=_pump, args=(raw, loop, queue), name=f"watch {path}", daemon=True)
        thread.start()
        try:
            while (item := await queue.get()) is not None:
                if isinstance(item, BaseException):
                    raise KubeApiError(0, "", f"watch stream broke: {item}", where=path) from item
                event = json.loads(item)
                if event.get("type") == "ERROR":
                    raise status_error(event.get("object") or {}, 500, path)
                yield WatchEvent(str(event.get("type")), event.get("object") or {})
        finally:
            with contextlib.suppress(Exception):
                raw.shutdown()

    def _request(self, method: str, path: str, query: dict[str, str], body: Any, content_type: str) -> dict[str, Any]:
        response = self._send(method, path, query, body, content_type, self._timeout)
        data = response.read()
        return json.loads(data) if data else {}

    def _send(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        body: Any,
        content_type: str,
        timeout: float | tuple[float, float],
    ) -> RESTResponse:
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        serialized = self._api.param_serialize(
            method,
            path,
            query_params=list(query.items()),
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
        )
        try:
            response = self._api.call_api(*serialized, _request_timeout=timeout)
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise KubeApiError(0, "", f"cannot reach the API server at {self.host}: {err}", where=path) from err
        if not 200 <= response.status <= 299:
            raise _response_error(response, f"{method} {path}")
        return response


def _response_error(response: RESTResponse, where: str) -> KubeApiError:
    return _error_of(response.status, str(response.reason or ""), response.read(), where)


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


def _pump(
    raw: urllib3.BaseHTTPResponse,
    loop: asyncio.AbstractEventLoop,
    queue: asyncio.Queue[bytes | BaseException | None],
) -> None:
    """Worker thread: hand each line of the watch stream to the event loop, then ``None``."""

    def put(item: bytes | BaseException | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is listening any more
            loop.call_soon_threadsafe(queue.put_nowait, item)

    try:
        for line in _lines(raw):
            put(line)
    except Exception as err:
        put(err)
    finally:
        put(None)
        with contextlib.suppress(Exception):
            raw.release_conn()


def _lines(raw: urllib3.BaseHTTPResponse) -> Iterator[bytes]:
    pending = b""
    for chunk in raw.stream(None, decode_content=False):
        pending += chunk
        *complete, pending = pending.split(b"\n")
        yield from (line for line in complete if line.strip())
    if pending.strip():
        yield pending
