"""What a transport needs to reach one API server: its URL, the TLS settings and the credentials.

A kubeconfig that needs nothing but these (the commonest: a token, a token file or a client certificate)
is read without the official ``kubernetes`` package, whose import costs a driver more CPU at its start than
all the rest of its code; a kubeconfig the package alone understands (an exec or auth-provider plugin, a
user name and password) is loaded by it and its settings copied here, with its credentials still asked of
it on every request (it renews what expires). A proxy is the one setting only the package's transport
speaks for.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path

import attrs

from kubelet_dra.peers.errors import KubeletDRAError


class NoAnswer(KubeletDRAError):
    """No answer came (connection refused, TLS failure, timeout); the text says which."""


@attrs.define
class ApiConfig:
    """One API server and how to reach it. ``token_file`` is read again for every request (a pod's token is
    rotated by its kubelet while the pod runs), keeping the token read last while the file is mid-rotation;
    ``credentials``, when set, gives the Authorization header on every request instead (the official
    client's, which renews exec and auth-provider tokens)."""

    host: str
    ca_file: str | None = None
    verify: bool = True
    server_name: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    token: str | None = None
    token_file: str | None = None
    proxy: str | None = None
    credentials: Callable[[], str | None] | None = None
    official: object = None
    """The official client's ``Configuration`` this was copied from, if the kubeconfig needed it."""

    @property
    def fixed(self) -> bool:
        """The Authorization header never changes: it can be built once."""
        return self.token_file is None and self.credentials is None

    def authorization(self) -> str | None:
        """The Authorization header's value for the next request (None: send none)."""
        if self.credentials is not None:
            return self.credentials()
        if self.token_file is not None:
            with contextlib.suppress(OSError):  # mid-rotation or gone: keep the token read last
                self.token = Path(self.token_file).read_text().strip()
        return f"Bearer {self.token}" if self.token else None
