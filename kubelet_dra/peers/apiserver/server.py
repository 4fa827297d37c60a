"""``EmbeddedAPIServer``: a Kubernetes API server that real clients reach over HTTP(S).

Go DRA drivers (client-go), kubectl and the official Python client talk to it unchanged,
through a kubeconfig it writes. The rest of kubelet-dra may also use ``server.store`` directly
on the same event loop; both paths see the same objects, resourceVersions and watches.

Every request passes one middleware: authenticate (bearer token; only health and version
endpoints are open without one), serve, turn any ``ApiError`` into its ``Status`` response,
and log one line at ``-v 4``.
"""

from __future__ import annotations

import datetime
import ipaddress
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any

import attrs
from aiohttp import web

from kubelet_dra.peers import log
from kubelet_dra.peers.apiserver import discovery, jsonbody, kubeconfig, negotiation, openapi, routes, status
from kubelet_dra.peers.apiserver.auth import ADMIN, NODE_USER_PREFIX, TokenAuthenticator, User, node_user
from kubelet_dra.peers.apiserver.handlers import MAX_BODY_BYTES, USER, VERB, ResourceHandler
from kubelet_dra.peers.apiserver.negotiation import JSON_RENDERING
from kubelet_dra.peers.apiserver.persistence import Persistence
from kubelet_dra.peers.apiserver.presentation import respond, status_response
from kubelet_dra.peers.apiserver.resources import lookup
from kubelet_dra.peers.apiserver.status import ApiError
from kubelet_dra.peers.apiserver.store import Store
from kubelet_dra.peers.apiserver.streaming import WatchStreams
from kubelet_dra.peers.apiserver.tls import Certificates, ensure_certificates
from kubelet_dra.peers.errors import UsageError

DEFAULT_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
HEALTH_PATHS = ("/healthz", "/livez", "/readyz")
ANONYMOUS = User("system:anonymous", ("system:unauthenticated",))
ADMIN_KUBECONFIG_USER = "admin"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _utcnow() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


@attrs.frozen
class ListenAddress:
    """Where the server listens: an IP literal (or localhost) and a port (0 = pick a free one)."""

    host: str
    port: int

    @classmethod
    def parse(cls, text: str, *, allow_remote: bool = False, flag: str = "--listen") -> ListenAddress:
        """Parse ``host:port`` / ``[v6]:port``; a non-loopback host needs ``allow_remote``."""
        host, sep, port_text = text.rpartition(":")
        host = host.removeprefix("[").removesuffix("]")
        if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
            raise UsageError(
                f"cannot parse listen address {text!r}",
                where=flag,
                fix="give HOST:PORT, for example 127.0.0.1:6443, [::1]:6443 or 127.0.0.1:0 for any free port",
            )
        if host == "localhost":
            host = "127.0.0.1"
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            raise UsageError(
                f"listen host {host!r} is not an IP address",
                where=flag,
                fix="use an IP address such as 127.0.0.1 or ::1",
            ) from None
        if not address.is_loopback and not allow_remote:
            raise UsageError(
                f"refusing to listen on non-loopback address {host}: anyone who can reach it can try the API",
                where=flag,
                fix="listen on 127.0.0.1, or add --allow-remote if other machines must reach this server",
            )
        return cls(host, int(port_text))

    def url_host(self) -> str:
        return f"[{self.host}]" if ":" in self.host else self.host


class EmbeddedAPIServer:
    """An API server on an event loop; ``async with EmbeddedAPIServer() as server: ...``.

    ``data_dir`` keeps objects, the CA and tokens across restarts (a temporary directory
    otherwise). ``node_restricted`` confines node identities (``node_token``) to their own
    node's ResourceSlices. ``tls=False`` serves plain HTTP. Watches get a BOOKMARK every
    ``bookmark_interval`` seconds when they ask for bookmarks, end after ``watch_timeout``
    seconds unless they ask for less, and may start from any of the last ``history_size`` changes.
    """

    def __init__(
        self,
        listen: str = "127.0.0.1:0",
        data_dir: str | Path | None = None,
        node_restricted: bool = False,
        tls: bool = True,
        *,
        allow_remote: bool = False,
        bookmark_interval: float = 10.0,
        watch_timeout: float = 1800.0,
        history_size: int = 100_000,
        clock: Callable[[], datetime.datetime] = _utcnow,
    ) -> None:
        self._listen = ListenAddress.parse(listen, allow_remote=allow_remote)
        self._data_dir = Path(data_dir) if data_dir is not None else None
        self._node_restricted = node_restricted
        self._tls = tls
        self._bookmark_interval = bookmark_interval
        self._watch_timeout = watch_timeout
        self._history_size = history_size
        self._clock = clock
        self._log = log.get_logger("apiserver")
        self._temp_dir: Path | None = None
        self._runner: web.AppRunner | None = None
        self._streams: WatchStreams | None = None
        self._store: Store | None = None
        self._persistence: Persistence | None = None
        self._auth: TokenAuthenticator | None = None
        self._certificates: Certificates | None = None
        self._url = ""

    # --- lifecycle ---------------------------------------------------------------------------

    async def __aenter__(self) -> EmbeddedAPIServer:
        try:
            await self._start()
        except BaseException:
            await self._stop()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._stop()

    async def _start(self) -> None:
        jsonbody.allow_deep_documents()
        tokens_path: Path | None = None
        if self._data_dir is not None:
            state_dir = self._data_dir
            self._persistence = Persistence(state_dir)
            tokens_path = state_dir / "auth" / "tokens.json"
        else:
            state_dir = self._temp_dir = Path(tempfile.mkdtemp(prefix="kubelet-dra-apiserver-"))
        self._store = Store(self._persistence, history_size=self._history_size, clock=self._clock)
        self._create_namespaces(self._store)
        self._auth = TokenAuthenticator(tokens_path)
        self._auth.token_for(ADMIN)
        if self._tls:
            self._certificates = ensure_certificates(state_dir / "pki", [self._listen.host])
        self._streams = WatchStreams(
            self._store, bookmark_interval=self._bookmark_interval, default_timeout=self._watch_timeout
        )
        resources = ResourceHandler(
            self._store, self._streams, node_restricted=self._node_restricted, clock=self._clock
        )
        app = web.Application(middlewares=[self._middleware], client_max_size=MAX_BODY_BYTES)
        app.router.add_route("*", "/{path:.*}", _Dispatcher(resources, self._server_address).dispatch)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, handler_cancellation=True)
        await self._runner.setup()
        ssl_context = self._certificates.server_context() if self._certificates is not None else None
        site = web.TCPSite(self._runner, self._listen.host, self._listen.port, ssl_context=ssl_context)
        try:
            await site.start()
        except OSError as err:
            raise UsageError(
                f"cannot listen on {self._listen.host}:{self._listen.port}: {err.strerror or err}",
                where="--listen",
                fix="choose a free port, or port 0 to pick one",
            ) from err
        port = self._runner.addresses[0][1]
        self._url = f"{'https' if self._tls else 'http'}://{self._listen.url_host()}:{port}"
        self._log.info("API server listening", url=self._url, data_dir=str(self._data_dir or ""))

    async def _stop(self) -> None:
        if self._streams is not None:
            self._streams.close_all()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._persistence is not None:
            self._persistence.close()
            self._persistence = None
        if self._temp_dir is not None:
            shutil.rmtree(self._temp_dir, ignore_errors=True)
            self._temp_dir = None

    @staticmethod
    def _create_namespaces(store: Store) -> None:
        namespaces = lookup("", "v1", "namespaces")
        for name in DEFAULT_NAMESPACES:
            try:
                store.create(namespaces, None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
            except ApiError as err:
                if err.code != 409:
                    raise

    # --- what clients need --------------------------------------------------------------------

    @property
    def url(self) -> str:
        """``https://127.0.0.1:PORT`` (or ``http://`` with ``tls=False``)."""
        return self._url

    @property
    def store(self) -> Store:
        """The store behind the API, for in-process use on this event loop."""
        assert self._store is not None, "the server is not running"
        return self._store

    @property
    def ca_cert_path(self) -> Path | None:
        """The CA that signed the serving certificate (None with plain HTTP)."""
        return self._certificates.ca_cert_path if self._certificates is not None else None

    @property
    def ca_cert(self) -> bytes | None:
        """The CA certificate in PEM (None with plain HTTP)."""
        return self._certificates.ca_cert_pem if self._certificates is not None else None

    @property
    def admin_token(self) -> str:
        return self._authenticator.token_for(ADMIN)

    def node_token(self, node_name: str) -> str:
        """The bearer token of ``system:node:<node_name>`` (issued on first use)."""
        return self._authenticator.token_for(node_user(node_name))

    def kubeconfig(self, path: str | Path, user: str = ADMIN_KUBECONFIG_USER) -> Path:
        """Write a kubeconfig (mode 0600) for ``user``: "admin" or a node user ``system:node:<name>``."""
        identity = _identity(user)
        token = self._authenticator.token_for(identity)
        return kubeconfig.write(Path(path), self.url, self.ca_cert, user, token)

    def node_kubeconfig(self, node_name: str, path: str | Path) -> Path:
        """Write a kubeconfig for the node identity of ``node_name``."""
        return self.kubeconfig(path, user=node_user(node_name).name)

    @property
    def open_watches(self) -> int:
        return self._streams.open_count if self._streams is not None else 0

    @property
    def _authenticator(self) -> TokenAuthenticator:
        assert self._auth is not None, "the server is not running"
        return self._auth

    def _server_address(self) -> str:
        return self._url.split("://", 1)[1]

    # --- request pipeline ---------------------------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        started = time.monotonic()
        user = ANONYMOUS
        try:
            user = self._authenticate(request)
            request[USER] = user
            response = await handler(request)
        except ApiError as err:
            response = status_response(err, request.headers.get("Accept"))
        except Exception as err:  # a bug must become a 500 Status, never a dropped connection
            self._log.error("request failed", err, method=request.method, path=request.path_qs, user=user.name)
            response = status_response(
                ApiError(500, "InternalError", f"Internal error occurred: {err}", {"causes": [{"message": str(err)}]}),
                request.headers.get("Accept"),
            )
        self._log.v(4).info(
            "request",
            verb=request.get(VERB, request.method.lower()),
            path=request.path_qs,
            code=response.status,
            duration=f"{time.monotonic() - started:.4f}s",
            user=user.name,
        )
        return response

    def _authenticate(self, request: web.Request) -> User:
        header = request.headers.get("Authorization")
        if header is None and _is_public(request.path):
            return ANONYMOUS
        return self._authenticator.authenticate(header)


def _identity(user: str) -> User:
    if user == ADMIN_KUBECONFIG_USER:
        return ADMIN
    node = user.removeprefix(NODE_USER_PREFIX)
    if node and node != user:
        return node_user(node)
    raise UsageError(f"unknown API server user {user!r}", fix="use 'admin' or 'system:node:<node name>'")


def _is_public(path: str) -> bool:
    return path == "/version" or any(path == p or path.startswith(f"{p}/") for p in HEALTH_PATHS)


class _Dispatcher:
    """Routes a path to health, version, OpenAPI, discovery or the resource handler."""

    def __init__(self, resources: ResourceHandler, server_address: Callable[[], str]) -> None:
        self._resources = resources
        self._server_address = server_address

    async def dispatch(self, request: web.Request) -> web.StreamResponse:
        path = request.path.rstrip("/") or "/"
        if path.startswith(("/api/", "/apis/")) or path in ("/api", "/apis"):
            target = routes.parse(path)
            if isinstance(target, routes.ResourcePath):
                return await self._resources.handle(request, target)
            _only_get(request)
            return self._discovery(request, target)
        _only_get(request)
        if _is_public(path) and path != "/version":
            return web.Response(text="ok", content_type="text/plain")
        if path == "/version":
            return respond(200, discovery.version_info(), JSON_RENDERING)
        if path == "/openapi/v3":
            return respond(200, openapi.index(discovery.GIT_VERSION), JSON_RENDERING)
        if path.startswith("/openapi/v3/"):
            body = openapi.document(discovery.GIT_VERSION, path.removeprefix("/openapi/v3/"))
            if body is not None:
                return web.Response(body=body, headers={"Content-Type": negotiation.JSON})
        raise routes.not_found(path)

    def _discovery(self, request: web.Request, target: routes.DiscoveryPath) -> web.Response:
        accept = request.headers.get("Accept")
        if target.legacy_core:
            if negotiation.wants_aggregated_discovery(accept):
                return _aggregated(discovery.aggregated_core())
            return respond(200, discovery.core_versions(self._server_address()), JSON_RENDERING)
        if target.group is None:
            if negotiation.wants_aggregated_discovery(accept):
                return _aggregated(discovery.aggregated_groups())
            return respond(200, discovery.api_group_list(), JSON_RENDERING)
        if target.version is None:
            return respond(200, _api_group(target.group, request.path), JSON_RENDERING)
        return respond(200, discovery.resource_list(target.group, target.version), JSON_RENDERING)


def _only_get(request: web.Request) -> None:
    if request.method not in ("GET", "HEAD"):
        raise status.method_not_allowed(f"the server does not allow the {request.method} method on {request.path}")


def _aggregated(document: dict[str, Any]) -> web.Response:
    return web.Response(
        body=negotiation.encode_json(document), headers={"Content-Type": negotiation.AGGREGATED_DISCOVERY}
    )


def _api_group(group: str, path: str) -> dict[str, Any]:
    """``/apis/<group>``: the group's entry of ``/apis`` as an APIGroup document."""
    for entry in discovery.api_group_list()["groups"]:
        if entry["name"] == group:
            return {"kind": "APIGroup", "apiVersion": "v1", **entry}
    raise routes.not_found(path)
