"""Building an API client configuration from a kubeconfig file or a pod's service account.

A bad kubeconfig is the commonest reason a driver cannot reach the API server, so every failure
becomes a ``ConfigError`` naming the file and the problem instead of a client-library traceback.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml
from kubernetes.client import Configuration
from kubernetes.config import ConfigException, incluster_config, kube_config

from kubelet_dra.errors import ConfigError

_FIX = "pass --kubeconfig with a kubeconfig file, e.g. the one `kubelet-dra apiserver` writes"


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


def _from_file(path: Path) -> Configuration:
    try:
        text = path.read_text()
    except FileNotFoundError as err:
        raise ConfigError("kubeconfig file does not exist", where=str(path), fix=_FIX) from err
    except OSError as err:
        raise ConfigError(f"cannot read kubeconfig: {err.strerror}", where=str(path), fix=_FIX) from err
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(f"kubeconfig is not valid YAML: {err}", where=str(path), fix=_FIX) from err
    if not isinstance(document, dict):
        raise ConfigError("kubeconfig is not a YAML mapping", where=str(path), fix=_FIX)
    for field in ("clusters", "contexts"):
        if not document.get(field):
            raise ConfigError(f"kubeconfig has no {field}", where=str(path), fix=_FIX)
    configuration = Configuration()
    try:
        kube_config.load_kube_config(config_file=str(path), client_configuration=configuration, persist_config=False)
    except (ConfigException, KeyError, TypeError, ValueError) as err:
        raise ConfigError(f"kubeconfig unusable: {err}", where=str(path), fix=_FIX) from err
    return configuration
