"""Kubeconfigs of the embedded API server with changes, and the official client's answers, for the API client's
tests."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from kubernetes import config

from kubelet_dra.workbench.testbed.serverthread import ServerThread


def kubeconfig(apiserver: ServerThread, path: Path, **user_and_cluster: Any) -> Path:
    """The server's admin kubeconfig with ``user_and_cluster`` changes (``cluster__X`` / ``user__X`` keys, ``_``
    for ``-`` in X; None removes the field)."""
    document = yaml.safe_load(apiserver.kubeconfig.read_text())
    for key, value in user_and_cluster.items():
        where, _, field = key.partition("__")
        entry = document["clusters"][0]["cluster"] if where == "cluster" else document["users"][0]["user"]
        if value is None:
            entry.pop(field.replace("_", "-"), None)
        else:
            entry[field.replace("_", "-")] = value
    path.write_text(yaml.safe_dump(document))
    return path


def exec_kubeconfig(apiserver: ServerThread, directory: Path, token: str) -> Path:
    """The admin kubeconfig with an exec plugin (a script) that hands out ``token``: only the official client
    loads it."""
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential", "status": {"token": token}}
    script = directory / "credential"
    script.write_text(f"#!/bin/sh\necho '{json.dumps(credential)}'\n")
    script.chmod(0o755)
    command = {"apiVersion": "client.authentication.k8s.io/v1", "command": str(script), "interactiveMode": "Never"}
    return kubeconfig(apiserver, directory / "exec.kubeconfig", user__token=None, user__exec=command)


def client_certificate(common_name: str) -> tuple[bytes, bytes]:
    """A self-signed client certificate and its key, in PEM."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return certificate.public_bytes(serialization.Encoding.PEM), key_pem


def official_get(kubeconfig: Path, path: str) -> tuple[int, dict[str, Any]]:
    """``GET path`` through the official client (urllib3) with ``kubeconfig``, for comparison: the HTTP status and
    the JSON answer (a Status for an error)."""
    with config.new_client_from_config(config_file=str(kubeconfig)) as api:
        request = api.param_serialize(
            "GET", path, header_params={"Accept": "application/json"}, auth_settings=["BearerToken"]
        )
        response = api.call_api(*request)
        return response.status, json.loads(response.read())
