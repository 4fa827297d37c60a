"""The official (synchronous) ``kubernetes`` client, for what only it does.

It loads the kubeconfigs this project does not read itself (an exec or auth-provider plugin renews its
token; a user name and password), and it sends the requests of a configuration the kept-alive transport
cannot speak for (a proxy): each from a worker thread (the loop's, or the caller's executor),
so the event loop never blocks, a watch's stream read by a thread of its own. Importing it costs 0.4 s of
CPU, so nothing imports this module before it is needed.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import AsyncIterator
from concurrent.futures import Executor
from typing import Any

import urllib3
from kubernetes.client import ApiClient, Configuration
from kubernetes.config import ConfigException, kube_config

from kubelet_dra.peers.kube import keepalive
from kubelet_dra.peers.kube.apiconfig import ApiConfig, NoAnswer

LOAD_ERRORS = (ConfigException, KeyError, TypeError, ValueError, OSError)
"""What the library's loader raises for a kubeconfig it cannot use."""


def load(document: dict[str, Any], path: str, *, renews: bool, token_file: str | None) -> ApiConfig:
    """The settings of a kubeconfig ``document`` (read from ``path``) as the library loads them; ``renews``: its
    user's token comes from an exec or auth-provider plugin, and expires; a ``token_file`` is read again for
    every request (the library reads it once)."""
    configuration = Configuration()
    # What load_kube_config does, from the document already read: the root node carries the file's path, so
    # relative file names resolve next to the kubeconfig.
    loader = kube_config.KubeConfigLoader(
        config_dict=kube_config.ConfigNode(path, document, path), config_base_path=None
    )
    loader.load_and_set(configuration)
    if not renews:
        # The library's hook re-applies the whole kubeconfig before every request (a proxy lookup in the
        # environment included) so that an exec or auth-provider token is renewed when it expires; any
        # other user's credentials are fixed once loaded, and the hook would only cost each request.
        configuration.refresh_api_key_hook = None
    return ApiConfig(
        str(configuration.host),
        ca_file=configuration.ssl_ca_cert or None,
        verify=bool(configuration.verify_ssl),
        server_name=configuration.tls_server_name or None,
        cert_file=configuration.cert_file or None,
        key_file=configuration.key_file or None,
        proxy=configuration.proxy or None,
        token_file=token_file,
        credentials=None if token_file else functools.partial(_authorization, configuration),
        official=configuration,
    )


def _authorization(configuration: Configuration) -> str | None:
    """The Authorization header the library would send (its refresh hook runs: an expired token is renewed)."""
    bearer = configuration.auth_settings().get("BearerToken")
    return str(bearer["value"]) if bearer is not None and bearer["in"] == "header" and bearer["value"] else None


class OfficialTransport:
    """Requests through the library's ``ApiClient`` (urllib3), with the credentials of ``ApiConfig``."""

    def __init__(self, config: ApiConfig, *, timeout: float, connections: int | None) -> None:
        configuration = config.official if isinstance(config.official, Configuration) else _configuration(config)
        if connections is not None:
            configuration.connection_pool_maxsize = connections
        self._config = config
        self._api = ApiClient(configuration)  # its pool manager: the library's TLS and proxy settings
        self._pool = self._api.rest_client.pool_manager
        self._host = str(configuration.host)
        self._timeout = timeout

    def close(self) -> None:
        self._api.close()

    async def request(
        self, method: str, target: str, body: bytes | None, content_type: str, executor: Executor | None
    ) -> tuple[int, str, bytes]:
        call = functools.partial(self._whole, method, target, body, content_type)
        return await asyncio.get_running_loop().run_in_executor(executor, call)

    async def stream(self, target: str, read_timeout: float) -> keepalive.Stream:
        """The answer of ``GET target`` with its body still to come, read by a thread of its own."""
        timeout = urllib3.Timeout(connect=self._timeout, read=read_timeout)
        raw = await asyncio.to_thread(self._send, "GET", target, None, "", timeout)
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[bytes | BaseException | None] = asyncio.Queue()
        threading.Thread(target=_pump, args=(raw, loop, queue), name=f"watch {target}", daemon=True).start()

        async def chunks() -> AsyncIterator[bytes]:
            while (item := await queue.get()) is not None:
                if isinstance(item, BaseException):
                    raise NoAnswer(f"the stream broke: {item}") from item
                yield item

        return keepalive.Stream(raw.status, str(raw.reason or ""), chunks(), raw.shutdown)

    def _whole(self, method: str, target: str, body: bytes | None, content_type: str) -> tuple[int, str, bytes]:
        raw = self._send(method, target, body, content_type, urllib3.Timeout(total=self._timeout))
        try:
            return raw.status, str(raw.reason or ""), raw.read()
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise NoAnswer(str(err)) from err
        finally:
            raw.release_conn()

    def _send(
        self, method: str, target: str, body: bytes | None, content_type: str, timeout: urllib3.Timeout
    ) -> urllib3.BaseHTTPResponse:
        headers = {"Accept": "application/json", "User-Agent": keepalive.USER_AGENT}
        if body is not None:
            headers["Content-Type"] = content_type
        if (authorization := self._config.authorization()) is not None:
            headers["Authorization"] = authorization
        url = self._host + target
        try:
            return self._pool.request(method, url, body=body, headers=headers, timeout=timeout, preload_content=False)
        except (urllib3.exceptions.HTTPError, OSError) as err:
            raise NoAnswer(str(err)) from err


def _configuration(config: ApiConfig) -> Configuration:
    """The library's settings for a configuration read without it (its proxy is why it is used)."""
    configuration = Configuration()
    configuration.host = config.host
    configuration.ssl_ca_cert = config.ca_file
    configuration.verify_ssl = config.verify
    configuration.tls_server_name = config.server_name
    configuration.cert_file = config.cert_file
    configuration.key_file = config.key_file
    configuration.proxy = config.proxy
    return configuration


def _pump(
    raw: urllib3.BaseHTTPResponse,
    loop: asyncio.AbstractEventLoop,
    queue: asyncio.Queue[bytes | BaseException | None],
) -> None:
    """Worker thread: hand each piece of the stream to the event loop, then ``None``."""

    def put(item: bytes | BaseException | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody is listening any more
            loop.call_soon_threadsafe(queue.put_nowait, item)

    try:
        for chunk in raw.stream(None, decode_content=False):
            put(chunk)
    except Exception as err:
        put(err)
    finally:
        put(None)
        with contextlib.suppress(Exception):
            raw.release_conn()
