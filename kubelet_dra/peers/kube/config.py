"""Building an API client configuration from a kubeconfig file or a pod's service account.

A bad kubeconfig is the commonest reason a driver cannot reach the API server, so every failure
becomes a ``ConfigError`` naming the file and the problem instead of a client-library traceback.
A kubeconfig whose user has a ``tokenFile`` reads that file again for every request, as client-go
re-reads it: a pod's service-account token is rotated by its kubelet while the pod runs. That is
how :func:`in_cluster_kubeconfig` works: one file that this process and the drivers it starts share.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml
from kubernetes.client import Configuration
from kubernetes.config import ConfigException, incluster_config, kube_config

from kubelet_dra.peers.errors import ConfigError

_FIX = "pass --kubeconfig with a kubeconfig file, e.g. the one `kubelet-dra apiserver` writes"
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader where PyYAML has it: the pure-Python one took 15 ms a kubeconfig on a busy machine, and a
thousand nodes' drivers in one process load a thousand of them while their event loop waits."""
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
"""Where a pod's service account token and the cluster's CA are mounted."""


def default_kubeconfig() -> str:
    """Where kubectl would look: the first entry of $KUBECONFIG, else ~/.kube/config."""
    paths = [path for path in os.environ.get("KUBECONFIG", "").split(os.pathsep) if path]
    return paths[0] if paths else os.path.expanduser(kube_config.KUBE_CONFIG_DEFAULT_LOCATION)


def load_configuration(kubeconfig: str | None = None) -> Configuration:
    """Client configuration from ``kubeconfig``; without one, in-cluster credentials or kubectl's default file."""
    if not kubeconfig and incluster_config.SERVICE_HOST_ENV_NAME in os.environ:
        configuration = Configuration()
        try:
            incluster_config.load_incluster_config(client_configuration=configuration)
        except ConfigException as err:
            raise ConfigError(f"in-cluster configuration unusable: {err}", where="service account", fix=_FIX) from err
        return configuration
    return _from_file(Path(kubeconfig or default_kubeconfig()).expanduser())


def in_cluster_kubeconfig(directory: str = SERVICE_ACCOUNT_DIR, environ: Mapping[str, str] = os.environ) -> str:
    """A kubeconfig of the pod's service account: the API server that ``KUBERNETES_SERVICE_HOST`` and
    ``_PORT`` name, the CA and the token *file* of ``directory`` (so a rotated token is picked up)."""
    fix = "run in a pod with a service account token mounted, or pass --kubeconfig"
    host, port = (
        environ.get(incluster_config.SERVICE_HOST_ENV_NAME),
        environ.get(incluster_config.SERVICE_PORT_ENV_NAME),
    )
    if not host or not port:
        raise ConfigError(
            f"{incluster_config.SERVICE_HOST_ENV_NAME} and {incluster_config.SERVICE_PORT_ENV_NAME} are not set",
            where="environment",
            fix=fix,
        )
    account = Path(directory).absolute()
    for name in ("token", "ca.crt"):
        if not (account / name).is_file():
            raise ConfigError(f"the service account has no {name}", where=str(account / name), fix=fix)
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "in-cluster", "cluster": {"server": server, "certificate-authority": str(account / "ca.crt")}}
        ],
        "users": [{"name": "service-account", "user": {"tokenFile": str(account / "token")}}],
        "contexts": [{"name": "in-cluster", "context": {"cluster": "in-cluster", "user": "service-account"}}],
        "current-context": "in-cluster",
    }
    return yaml.safe_dump(document, sort_keys=False)


def _from_file(path: Path) -> Configuration:
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
    configuration = Configuration()
    try:
        # What load_kube_config does, from the document read above instead of parsing the file a second time:
        # the root node carries the file's path, so relative file names resolve next to the kubeconfig.
        loader = kube_config.KubeConfigLoader(
            config_dict=kube_config.ConfigNode(str(path), document, str(path)), config_base_path=None
        )
        loader.load_and_set(configuration)
    except (ConfigException, KeyError, TypeError, ValueError) as err:
        raise ConfigError(f"kubeconfig unusable: {err}", where=str(path), fix=_FIX) from err
    if not _user(document).keys() & {"exec", "auth-provider"}:
        # The library's hook re-applies the whole kubeconfig before every request (a proxy lookup in the
        # environment included) so that an exec or auth-provider token is renewed when it expires; any
        # other user's credentials are fixed once loaded, and the hook would only cost each request.
        configuration.refresh_api_key_hook = None
    if (token_file := _token_file(document, path)) is not None:
        # the library declares the hook only by its None default
        configuration.refresh_api_key_hook = _reader(token_file)  # type: ignore[assignment]
    return configuration


def _user(document: dict[str, Any]) -> dict[str, Any]:
    """The current context's user entry (empty when there is none)."""
    contexts = {entry.get("name"): entry.get("context") or {} for entry in document.get("contexts") or []}
    user_name = contexts.get(document.get("current-context"), {}).get("user")
    users = {entry.get("name"): entry.get("user") or {} for entry in document.get("users") or []}
    return dict(users.get(user_name) or {})


def _token_file(document: dict[str, Any], path: Path) -> Path | None:
    """The ``tokenFile`` of the current context's user (relative to the kubeconfig's dir), if it has one."""
    token_file = _user(document).get("tokenFile")
    return path.parent / token_file if token_file else None


def _reader(token_file: Path) -> Callable[[Configuration], None]:
    def refresh(configuration: Configuration) -> None:
        with contextlib.suppress(OSError):  # mid-rotation or gone: keep the token read last
            configuration.api_key["BearerToken"] = f"Bearer {token_file.read_text().strip()}"

    return refresh
