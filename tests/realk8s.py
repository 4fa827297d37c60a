"""The real Kubernetes programs of ``../shared/interop``, for the interop tier and benchmarks.

``KDRA_INTEROP_DIR`` points at another copy of the folder. Tests reach these through the fixtures
of ``tests/interop/conftest.py``, which skip with :func:`interop_missing`'s reason when absent.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import attrs

REPO = Path(__file__).resolve().parents[1]
INTEROP_DIR = Path(os.environ.get("KDRA_INTEROP_DIR", REPO.parent / "shared" / "interop"))
CLIENT_GO_REFUSALS = ("unknown format", "415", "Unsupported Media Type", "UnsupportedMediaType")


class InteropError(RuntimeError):
    """A real program could not be started; the message holds its own words."""


def interop_missing() -> str | None:
    """Why the interop programs cannot be used here, or None when they can."""
    if not (INTEROP_DIR / "unpack").is_file():
        return f"the real Kubernetes programs are absent ({INTEROP_DIR} has no 'unpack'; set KDRA_INTEROP_DIR)"
    return None


@attrs.frozen
class RealControlPlane:
    """A running real etcd + kube-apiserver 1.36 (and any components asked for), started by the interop scripts."""

    url: str
    kubeconfig: Path
    token: str
    ca: Path
    dir: Path

    def node_kubeconfig(self, node: str) -> Path:
        """A kubeconfig of the node identity ``system:node:<node>`` (only for nodes named at start)."""
        path = self.dir / f"kubeconfig-node-{node}"
        if not path.is_file():
            raise LookupError(f"no node identity for {node!r}: start the control plane with it in `nodes`")
        return path

    def log(self, component: str = "apiserver") -> str:
        return (self.dir / f"{component}.log").read_text(errors="replace")


def start_control_plane(directory: Path, *components: str, nodes: tuple[str, ...] = ()) -> RealControlPlane:
    """Start a real control plane in ``directory``; stop it with :func:`stop_control_plane`."""
    env = {**os.environ, "NODES": " ".join(nodes)}
    result = subprocess.run(
        [str(INTEROP_DIR / "start-control-plane"), str(directory), *components],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
    )
    if result.returncode != 0:
        stop_control_plane(directory)
        raise InteropError(f"the real control plane did not start: {result.stderr.strip()[-2000:]}")
    info = json.loads(result.stdout.strip().splitlines()[-1])
    return RealControlPlane(
        url=info["url"], kubeconfig=Path(info["kubeconfig"]), token=info["token"], ca=Path(info["ca"]), dir=directory
    )


def stop_control_plane(directory: Path) -> None:
    subprocess.run(
        [str(INTEROP_DIR / "stop-control-plane"), str(directory)], capture_output=True, timeout=120, check=False
    )


def client_go_refusals(log_text: str) -> list[str]:
    """The lines of a client-go program's log that show an API server refusing its encoding."""
    return [line for line in log_text.splitlines() if any(mark in line for mark in CLIENT_GO_REFUSALS)]
