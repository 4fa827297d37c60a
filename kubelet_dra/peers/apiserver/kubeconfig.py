"""Kubeconfig files for clients of the embedded API server (kubectl, client-go, the Python client).

One cluster, one user (a bearer token), one context that is also the current one; the CA is
embedded as ``certificate-authority-data`` so the file works from any directory. Mode 0600,
because the token is a credential.
"""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

from kubelet_dra.peers.apiserver.secretfiles import write_private

CLUSTER_NAME = "kubelet-dra"


def render(server_url: str, ca_pem: bytes | None, user_name: str, token: str) -> dict[str, object]:
    """The kubeconfig document; ``ca_pem`` None means plain HTTP (no CA to trust)."""
    cluster: dict[str, str] = {"server": server_url}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    context = f"{user_name}@{CLUSTER_NAME}"
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": [{"name": CLUSTER_NAME, "cluster": cluster}],
        "users": [{"name": user_name, "user": {"token": token}}],
        "contexts": [
            {"name": context, "context": {"cluster": CLUSTER_NAME, "user": user_name, "namespace": "default"}}
        ],
        "current-context": context,
    }


def write(path: Path, server_url: str, ca_pem: bytes | None, user_name: str, token: str) -> Path:
    """Write the kubeconfig to ``path`` (mode 0600, atomically) and return the path."""
    document = render(server_url, ca_pem, user_name, token)
    write_private(path, yaml.safe_dump(document, sort_keys=False).encode())
    return path
