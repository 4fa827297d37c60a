"""Reading a kubeconfig file or a pod's service account into an :class:`ApiConfig`.

A bad kubeconfig is the commonest reason a driver cannot reach the API server, so every failure
becomes a ``ConfigError`` naming the file and the problem instead of a client-library traceback.
A kubeconfig whose user has a ``tokenFile`` reads that file again for every request, as client-go
re-reads it: a pod's service-account token is rotated by its kubelet while the pod runs. That is
how :func:`in_cluster_kubeconfig` works: one file that this process and the drivers it starts share.
A kubeconfig that needs only a server, its CA (or none), a token, a token file or a client certificate
is read here; any other (an exec or auth-provider plugin, a user name and password, a field this reader
does not know) is loaded by the official ``kubernetes`` package (``official``), imported only then.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import contextlib
import os
import tempfile
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import yaml

from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.peers.kube.apiconfig import ApiConfig

_FIX = "pass --kubeconfig with a kubeconfig file, e.g. the one `kubelet-dra apiserver` writes"
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader where PyYAML has it: the pure-Python one took 15 ms a kubeconfig on a busy machine, and a
thousand nodes' drivers in one process load a thousand of them while their event loop waits."""
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
"""Where a pod's service account token and the cluster's CA are mounted."""
SERVICE_HOST_ENV_NAME = "KUBERNETES_SERVICE_HOST"
SERVICE_PORT_ENV_NAME = "KUBERNETES_SERVICE_PORT"
_IGNORED = {"extensions", "disable-compression"}
"""Fields that change nothing on either path (the official client ignores them; no request asks for compression)."""
CLUSTER_FIELDS = {"server", "certificate-authority", "certificate-authority-data", "insecure-skip-tls-verify"}
CLUSTER_FIELDS |= {"tls-server-name", "proxy-url", *_IGNORED}
USER_FIELDS = {"token", "tokenFile", "client-certificate", "client-certificate-data", "client-key", "client-key-data"}
USER_FIELDS |= _IGNORED
"""What this reader understands; a kubeconfig with any other field is the official package's to load."""


def default_kubeconfig() -> str:
    """Where kubectl would look: the first entry of $KUBECONFIG, else ~/.kube/config."""
    paths = [path for path in os.environ.get("KUBECONFIG", "").split(os.pathsep) if path]
    return paths[0] if paths else os.path.expanduser("~/.kube/config")


def load_configuration(kubeconfig: str | None = None) -> ApiConfig:
    """The API server ``kubeconfig`` names; without one, in-cluster credentials or kubectl's default file."""
    if not kubeconfig and SERVICE_HOST_ENV_NAME in os.environ:
        return _in_cluster(os.environ, Path(SERVICE_ACCOUNT_DIR))
    return _from_file(Path(kubeconfig or default_kubeconfig()).expanduser())


def _in_cluster(environ: Mapping[str, str], account: Path) -> ApiConfig:
    """As the official in-cluster loader: the service's address, the account's CA and token (its file, read
    again for every request)."""
    host, port = environ.get(SERVICE_HOST_ENV_NAME), environ.get(SERVICE_PORT_ENV_NAME)
    if not host or not port:
        problem = f"{SERVICE_HOST_ENV_NAME} or {SERVICE_PORT_ENV_NAME} is empty or not set"
        raise ConfigError(f"in-cluster configuration unusable: {problem}", where="service account", fix=_FIX)
    for name in ("token", "ca.crt"):
        with contextlib.suppress(OSError):
            if (account / name).read_text().strip():
                continue
        raise ConfigError(
            f"in-cluster configuration unusable: the service account's {name} is missing or empty",
            where=str(account / name),
            fix=_FIX,
        )
    config = ApiConfig(_server(host, port), ca_file=str(account / "ca.crt"), token_file=str(account / "token"))
    config.authorization()
    return config


def _server(host: str, port: str) -> str:
    return f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"


def in_cluster_kubeconfig(directory: str = SERVICE_ACCOUNT_DIR, environ: Mapping[str, str] = os.environ) -> str:
    """A kubeconfig of the pod's service account: the API server that ``KUBERNETES_SERVICE_HOST`` and
    ``_PORT`` name, the CA and the token *file* of ``directory`` (so a rotated token is picked up)."""
    fix = "run in a pod with a service account token mounted, or pass --kubeconfig"
    host, port = environ.get(SERVICE_HOST_ENV_NAME), environ.get(SERVICE_PORT_ENV_NAME)
    if not host or not port:
        raise ConfigError(
            f"{SERVICE_HOST_ENV_NAME} and {SERVICE_PORT_ENV_NAME} are not set", where="environment", fix=fix
        )
    account = Path(directory).absolute()
    for name in ("token", "ca.crt"):
        if not (account / name).is_file():
            raise ConfigError(f"the service account has no {name}", where=str(account / name), fix=fix)
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "in-cluster",
                "cluster": {"server": _server(host, port), "certificate-authority": str(account / "ca.crt")},
            }
        ],
        "users": [{"name": "service-account", "user": {"tokenFile": str(account / "token")}}],
        "contexts": [{"name": "in-cluster", "context": {"cluster": "in-cluster", "user": "service-account"}}],
        "current-context": "in-cluster",
    }
    return yaml.safe_dump(document, sort_keys=False)


def _from_file(path: Path) -> ApiConfig:
    try:
        text = path.read_text()
    except FileNotFoundError as err:
        raise ConfigError("kubeconfig file does not exist", where=str(path), fix=_FIX) from err
    except OSError as err:
        raise ConfigError(f"cannot read kubeconfig: {err.strerror}", where=str(path), fix=_FIX) from err
    try:
        document = yaml.load(text, Loader=YAML_LOADER)
    except yaml.YAMLError as err:
        raise ConfigError(f"kubeconfig is not valid YAML: {err}", where=str(path), fix=_FIX) from err
    if not isinstance(document, dict):
        raise ConfigError("kubeconfig is not a YAML mapping", where=str(path), fix=_FIX)
    for field in ("clusters", "contexts"):
        if not document.get(field):
            raise ConfigError(f"kubeconfig has no {field}", where=str(path), fix=_FIX)
    reader = _Reader(path)
    context = reader.entry(document, "contexts", document.get("current-context"), "context")
    cluster = reader.entry(document, "clusters", context.get("cluster"), "cluster")
    user = reader.entry(document, "users", context["user"], "user", optional=True) if context.get("user") else {}
    if cluster.keys() <= CLUSTER_FIELDS and user.keys() <= USER_FIELDS:
        return reader.config(cluster, user)
    from kubelet_dra.peers.kube import official  # the package's import is paid only by kubeconfigs that need it

    renews, token_file = bool(user.keys() & {"exec", "auth-provider"}), reader.file(user, "user.tokenFile")
    try:
        return official.load(document, str(path), renews=renews, token_file=token_file)
    except official.LOAD_ERRORS as err:
        raise ConfigError(f"kubeconfig unusable: {err}", where=str(path), fix=_FIX) from err


@attrs.frozen
class _Reader:
    """The fields of one kubeconfig file, each failure named with the field that has it."""

    path: Path

    def fail(self, problem: str) -> ConfigError:
        return ConfigError(f"kubeconfig unusable: {problem}", where=str(self.path), fix=_FIX)

    def entry(
        self, document: dict[str, Any], field: str, name: Any, kind: str, *, optional: bool = False
    ) -> dict[str, Any]:
        """The ``kind`` mapping of the entry of ``field`` called ``name`` (empty when ``optional`` and missing,
        as the official loader takes a context's missing user for none)."""
        entries = document.get(field) or []
        if not isinstance(entries, list) or not all(isinstance(entry, dict) and "name" in entry for entry in entries):
            raise self.fail(f"{field} must be a list of entries with a name")
        found = [entry.get(kind) for entry in entries if entry["name"] == name]
        if len(found) > 1:
            raise self.fail(f"{field} has {len(found)} entries named {name!r}")
        if not found and optional:
            return {}
        if not found:
            what = "current-context" if kind == "context" else f"the current context's {kind}"
            raise self.fail(f"{what} {name!r} is not among the {field}")
        if not isinstance(found[0], dict):
            raise self.fail(f"{field} entry {name!r} has no {kind} mapping")
        return found[0]

    def config(self, cluster: dict[str, Any], user: dict[str, Any]) -> ApiConfig:
        host = self.text(cluster, "cluster.server", required=True).rstrip("/")
        verify = cluster.get("insecure-skip-tls-verify", False)
        if not isinstance(verify, bool):
            raise self.fail(f"cluster.insecure-skip-tls-verify must be true or false, not {verify!r}")
        config = ApiConfig(
            host,
            verify=not verify,
            server_name=self.text(cluster, "cluster.tls-server-name") or None,
            token=self.text(user, "user.token") or None,
            token_file=self.file(user, "user.tokenFile"),
            proxy=self.text(cluster, "cluster.proxy-url") or _environment_proxy(host),
        )
        if config.token_file is not None:
            try:  # read now to be named if it cannot be; then again for every request
                config.token = Path(config.token_file).read_text().strip()
            except OSError as err:
                raise self.fail(f"user.tokenFile cannot be read: {err.strerror}: {config.token_file}") from err
        if host.startswith("https"):  # as the official loader: TLS files only where TLS is spoken
            config.ca_file = self.file_or_data(cluster, "cluster.certificate-authority")
            config.cert_file = self.file_or_data(user, "user.client-certificate")
            config.key_file = self.file_or_data(user, "user.client-key")
        return config

    def text(self, entry: dict[str, Any], field: str, *, required: bool = False) -> str:
        value = entry.get(field.split(".", 1)[1])
        if value is None and not required:
            return ""
        if not isinstance(value, str) or not value:
            raise self.fail(f"{field} must be a non-empty string, not {value!r}")
        return value

    def file(self, entry: dict[str, Any], field: str) -> str | None:
        """The file ``field`` names, relative to the kubeconfig's directory, as kubectl reads it."""
        name = self.text(entry, field)
        return os.path.normpath(self.path.absolute().parent / name) if name else None

    def file_or_data(self, entry: dict[str, Any], field: str) -> str | None:
        """The file of ``field``, or one holding its ``-data`` (which wins, as in the official loader)."""
        if data := self.text(entry, f"{field}-data"):
            return _data_file(data, f"{field}-data", self)
        name = self.file(entry, field)
        if name is not None and not os.path.isfile(name):
            raise self.fail(f"{field} names a file that does not exist: {name}")
        return name


def _environment_proxy(host: str) -> str | None:
    """The proxy the environment sets for ``host``'s scheme, as the official client picks it."""
    proxies = urllib.request.getproxies()
    return proxies.get(host.split(":", 1)[0]) or proxies.get("all")


_DATA_FILES: dict[bytes, str] = {}


def _data_file(data: str, field: str, reader: _Reader) -> str:
    """A private file holding the base64 ``data`` (TLS reads certificates from files), one per content, removed
    when the process exits, as the official loader keeps them."""
    try:
        content = base64.b64decode("".join(data.split()), validate=True)  # line breaks allowed, as client-go reads it
    except (binascii.Error, ValueError) as err:
        raise reader.fail(f"{field} is not base64: {err}") from err
    if content not in _DATA_FILES:
        descriptor, name = tempfile.mkstemp(prefix="kubelet-dra-", suffix=".pem")
        with os.fdopen(descriptor, "wb") as file:
            file.write(content)
        if not _DATA_FILES:
            atexit.register(_remove_data_files)
        _DATA_FILES[content] = name
    return _DATA_FILES[content]


def _remove_data_files() -> None:
    for name in _DATA_FILES.values():
        with contextlib.suppress(OSError):
            os.unlink(name)
