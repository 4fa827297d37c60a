"""Run the embedded API server beside synchronous code: tests, scripts, notebooks.

``ServerThread`` runs an ``EmbeddedAPIServer`` on its own event loop in a daemon thread, so
synchronous clients (the official Python client, kubectl, urllib3) can use it while it keeps
serving, and streaming watches, in parallel. Anything that touches the server object itself
runs on the server's loop through ``ServerThread.call``, because the store is single-threaded.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import urllib3
from kubernetes import client, config

from kubelet_dra.peers.apiserver.server import EmbeddedAPIServer

T = TypeVar("T")


class ServerThread:
    """An ``EmbeddedAPIServer`` on its own loop in a daemon thread; ``start()`` writes an admin kubeconfig."""

    def __init__(self, workdir: Path, **options: Any) -> None:
        self.workdir = workdir
        self._options = options
        self._loop = asyncio.new_event_loop()
        self._ready: concurrent.futures.Future[EmbeddedAPIServer] = concurrent.futures.Future()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="apiserver", daemon=True)
        self.server: EmbeddedAPIServer
        self.kubeconfig: Path

    def start(self) -> ServerThread:
        self._thread.start()
        self.server = self._ready.result(timeout=30)
        self.kubeconfig = self.call(self.server.kubeconfig, self.workdir / "admin.kubeconfig")
        return self

    def stop(self) -> None:
        if self._thread.is_alive() and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(timeout=30)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._serve())
        finally:
            self._loop.close()

    async def _serve(self) -> None:
        self._stop = asyncio.Event()
        try:
            async with EmbeddedAPIServer(**self._options) as server:
                self._ready.set_result(server)
                await self._stop.wait()
        except BaseException as err:
            if not self._ready.done():
                self._ready.set_exception(err)
            raise

    def call(self, function: Callable[..., T], *args: Any) -> T:
        """Run ``function(*args)`` on the server's loop (the store is single-threaded) and return its result."""

        async def invoke() -> T:
            return function(*args)

        return asyncio.run_coroutine_threadsafe(invoke(), self._loop).result(timeout=30)

    @property
    def url(self) -> str:
        return self.server.url

    def api_client(self, kubeconfig: Path | None = None) -> client.ApiClient:
        return config.new_client_from_config(config_file=str(kubeconfig or self.kubeconfig))

    def node_kubeconfig(self, node: str) -> Path:
        return self.call(self.server.node_kubeconfig, node, self.workdir / f"{node}.kubeconfig")

    def request(
        self,
        method: str,
        path: str,
        *,
        token: str | None = "admin",
        body: Any = None,
        headers: dict[str, str] | None = None,
        preload: bool = True,
    ) -> urllib3.BaseHTTPResponse:
        """A raw HTTP(S) request, verified against the server's CA; ``token="admin"`` uses the admin token."""
        all_headers = dict(headers or {})
        if token == "admin":
            token = self.server.admin_token
        if token:
            all_headers["Authorization"] = f"Bearer {token}"
        data = body if isinstance(body, bytes | None) else json.dumps(body).encode()
        if data is not None:
            all_headers.setdefault("Content-Type", "application/json")
        ca = self.server.ca_cert_path
        pool = urllib3.PoolManager(ca_certs=str(ca)) if ca else urllib3.PoolManager()
        return pool.request(
            method, self.url + path, body=data, headers=all_headers, preload_content=preload, retries=False, timeout=30
        )

    def json(self, method: str, path: str, **kwargs: Any) -> tuple[int, Any]:
        response = self.request(method, path, **kwargs)
        return response.status, json.loads(response.data)


def resource_slice_manifest(
    name: str, node: str = "node-a", driver: str = "gpu.example.com", devices: int = 1
) -> dict[str, Any]:
    """A ResourceSlice at resource.k8s.io/v1 for ``node`` with ``devices`` simple devices."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": name},
        "spec": {
            "driver": driver,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": f"gpu-{index}"} for index in range(devices)],
        },
    }
