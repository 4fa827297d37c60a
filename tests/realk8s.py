"""The real Kubernetes programs of ``../shared/interop``, for the interop tier and benchmarks.

``KDRA_INTEROP_DIR`` points at another copy of the folder. Tests reach these through the fixtures
of ``tests/interop/conftest.py``, which skip with :func:`interop_missing`'s reason when absent.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import urllib3
import yaml

from kubelet_dra.workbench.testbed import manifests

REPO = Path(__file__).resolve().parents[1]
INTEROP_DIR = Path(os.environ.get("KDRA_INTEROP_DIR", REPO.parent / "shared" / "interop"))
CLIENT_GO_REFUSALS = (
    "unknown format",
    "Unsupported Media Type",
    "UnsupportedMediaType",
    "NotAcceptable",
    "failed to decode",
    "unable to decode",
    "cannot unmarshal",
)


class InteropError(RuntimeError):
    """A real program could not be started; the message holds its own words."""


def interop_missing() -> str | None:
    """Why the interop programs cannot be used here, or None when they can."""
    if not INTEROP_DIR.is_dir():
        return (
            f"the real Kubernetes programs are absent: {INTEROP_DIR} does not exist (put the shared folder beside"
            " the repository or set KDRA_INTEROP_DIR)"
        )
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

    def kubectl(self, *args: str, stdin: str = "", check: bool = True) -> subprocess.CompletedProcess[str]:
        """``kubectl ARGS`` as the admin; with ``check``, a failure raises with kubectl's own words."""
        result = subprocess.run(
            ["kubectl", "--kubeconfig", str(self.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if check and result.returncode != 0:
            raise InteropError(f"kubectl {' '.join(args)}: {result.stderr.strip()}")
        return result

    def get(self, *what: str) -> dict[str, Any] | None:
        """``kubectl get WHAT -o json``, None when it is not there."""
        result = self.kubectl("get", *what, "-o", "json", check=False)
        return json.loads(result.stdout) if result.returncode == 0 else None

    def service_account(self, name: str, namespace: str, directory: Path) -> Path:
        """Create a service account and mount its credentials in ``directory`` as a pod has them (``token``,
        ``ca.crt``, ``namespace``); bind it to roles yourself."""
        self.kubectl("create", "serviceaccount", name, "-n", namespace)
        directory.mkdir()
        (directory / "token").write_text(self.kubectl("create", "token", name, "-n", namespace).stdout.strip())
        shutil.copy(self.ca, directory / "ca.crt")
        (directory / "namespace").write_text(namespace)
        return directory

    def kubeconfig_of(self, token: str, path: Path) -> Path:
        """A kubeconfig like the admin's with another bearer ``token``, written to ``path``."""
        path.write_text(self.kubeconfig.read_text().replace(self.token, token))
        return path


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


@contextlib.contextmanager
def embedded_control_plane(directory: Path, nodes: tuple[str, ...] = ()) -> Iterator[RealControlPlane]:
    """``kubelet-dra apiserver`` and ``kubelet-dra controlplane`` (claims from templates, allocation) as a control
    plane dir ``start-kubelet`` accepts (``directory/kubeconfig``, the admin's): a real kubelet runs on the embedded
    server through :func:`real_kubelet` like on a real one. With ``nodes``, the server is node-restricted and each
    node's identity is ``directory/kubeconfig-node-<node>``, which ``start-kubelet`` uses. Both are stopped on exit."""
    kubeconfig = directory / "kubeconfig"
    command = [sys.executable, "-m", "kubelet_dra"]
    restricted = ["--node-restricted", *(word for node in nodes for word in ("--node", node))] if nodes else []
    with (directory / "apiserver.log").open("w") as api_log, (directory / "controlplane.log").open("w") as cp_log:
        server = subprocess.Popen(
            [*command, "apiserver", "--listen", "127.0.0.1:0", "--kubeconfig-out", str(kubeconfig), *restricted],
            stdout=api_log,
            stderr=subprocess.STDOUT,
        )
        processes = [server]
        try:
            written = [kubeconfig, *(directory / f"kubeconfig.node-{node}.kubeconfig" for node in nodes)]
            for _ in range(300):
                if all(path.is_file() for path in written) or server.poll() is not None:
                    break
                time.sleep(0.05)
            if not all(path.is_file() for path in written):
                raise InteropError(
                    f"the embedded API server did not start: {(directory / 'apiserver.log').read_text()}"
                )
            for node in nodes:
                (directory / f"kubeconfig.node-{node}.kubeconfig").rename(directory / f"kubeconfig-node-{node}")
            config = yaml.safe_load(kubeconfig.read_text())
            cluster = config["clusters"][0]["cluster"]
            ca = directory / "ca.crt"
            ca.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
            processes.append(
                subprocess.Popen(
                    [*command, "controlplane", "--kubeconfig", str(kubeconfig)], stdout=cp_log, stderr=subprocess.STDOUT
                )
            )
            yield RealControlPlane(
                url=cluster["server"],
                kubeconfig=kubeconfig,
                token=config["users"][0]["user"]["token"],
                ca=ca,
                dir=directory,
            )
        finally:
            for process in reversed(processes):
                process.terminate()
                process.wait(timeout=30)


GRAPH_LAG = "no relationship found between node"
"""The Node authorizer answers this until its graph has a pod's claims, which can be after a node saw the pod bound;
a kubelet retries the pod (ours does, and the tests still require it to run), so it is not a missing permission."""


def client_go_refusals(log_text: str) -> list[str]:
    """The lines of a client-go program's log that show an API server and it not understanding each other."""
    return [line for line in log_text.splitlines() if any(mark in line for mark in CLIENT_GO_REFUSALS)]


TEST_DRIVER = "test-driver.cdi.k8s.io"


def example_driver_cmd(bin_dir: Path, profile: str, extra: str = "") -> str:
    """``--driver-cmd`` of the DRA example driver with a device profile (gpu, cpu or net) and ``extra`` flags.

    QPS and burst are raised: at the default 5/10 its claim GET inside NodePrepareResources is
    throttled, which would measure client-go's rate limiter instead of the driver.
    """
    return (
        f"{bin_dir}/dra-example-kubeletplugin --node-name {{node}} --kubeconfig {{kubeconfig}}"
        " --kubelet-registrar-directory-path {registry_dir} --kubelet-plugins-directory-path {plugins_root}"
        f" --cdi-root {{cdi_root}} --device-profile {profile} --kube-api-qps 1000 --kube-api-burst 1000"
        + (f" {extra}" if extra else "")
    )


def kubernetes_test_driver_cmd(bin_dir: Path) -> str:
    """``--driver-cmd`` of Kubernetes' DRA test driver; give ``--driver-name`` too, so that the suite makes its
    ``<plugins root>/<driver>`` dir (the driver exits at once without it)."""
    return (
        f"{bin_dir}/dra-test-driver --kubeconfig {{kubeconfig}} kubelet-plugin --node-name {{node}}"
        " --plugin-registration-path {registry_dir} --datadir {plugins_root} --cdi-dir {cdi_root}"
    )


def nvidia_driver_cmd() -> str:
    """``--driver-cmd`` of NVIDIA's DRA GPU driver on mock NVML (4 mock A100s); the wrapper makes its fake driver
    root, which needs root."""
    return (
        f"{INTEROP_DIR}/nvidia-gpu-plugin --node-name {{node}} --kubeconfig {{kubeconfig}} --cdi-root {{cdi_root}}"
        " --kubelet-registrar-directory-path {registry_dir} --kubelet-plugins-directory-path {plugins_root}"
    )


def nvidia_driver_missing() -> str | None:
    """Why NVIDIA's driver cannot run here (no programs, not root), or None when it can."""
    if reason := interop_missing():
        return reason
    if os.geteuid() != 0:
        return "NVIDIA's driver on mock GPUs needs root (it makes a fake driver root with device nodes)"
    return None


DRIVER_DEFECTS: dict[tuple[str, str], str] = {
    ("dra-test-driver", check): (
        "advertises v1alpha1.DRAResourceHealth, but its stream's first message lists no devices and no"
        " later one lists its 4 published devices, so the kubelet reports their health Unknown"
        " (docs/protocol.md#device-health, C14): it reports only the health an e2e test injects"
    )
    for check in ("HEA-001", "HEA-002", "HEA-005")
}
"""Should-checks a real driver fails because of a defect of the driver, with the evidence: they are warnings
(exit 0), and failures with --strict. Every must-check must pass or skip with a reason, and no other
should-check may warn. The list of proven driver defects in docs/conformance.md is this one."""


def conformance_verdicts(report: dict, driver: str) -> tuple[dict[str, int], list[str]]:
    """The counts of a ``conformance --output json`` report and every finding that is not a proven defect:
    a failed check (a must-check, or any with --strict) not in ``DRIVER_DEFECTS``, a warning not in it, a
    proven defect that is a must-check (it would fail the run), and a skip without a reason."""
    unexplained = [
        f"{check['id']} ({check['level']}): {check['reason']}"
        for check in report["checks"]
        if check["result"] in ("failed", "warning")
        and ((driver, check["id"]) not in DRIVER_DEFECTS or check["level"] != "should")
    ]
    unexplained += [
        f"{check['id']}: skipped without a reason"
        for check in report["checks"]
        if check["result"] == "skipped" and not check["reason"]
    ]
    return report["counts"], unexplained


class Api:
    """One API server over HTTPS as a raw client sees it: no client library between the test and the bytes."""

    def __init__(self, url: str, token: str, ca: str) -> None:
        self.url, self.token = url, token
        self.pool = urllib3.PoolManager(ca_certs=ca)

    def raw(
        self, method: str, path: str, body: bytes | None = None, *, content_type: str = "", accept: str = ""
    ) -> urllib3.BaseHTTPResponse:
        headers = {"Authorization": f"Bearer {self.token}"}
        if accept:
            headers["Accept"] = accept
        if body is not None:
            headers["Content-Type"] = content_type
        return self.pool.request(method, self.url + path, body=body, headers=headers, retries=False, timeout=30)

    def __call__(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        """Status code and decoded JSON answer (the text when the answer is not JSON)."""
        data = body if isinstance(body, bytes | None) else json.dumps(body).encode()
        response = self.raw(method, path, data, content_type=content_type, accept="application/json")
        try:
            return response.status, json.loads(response.data)
        except ValueError:
            return response.status, response.data.decode(errors="replace")


REAL_KUBELET_LOCK = Path("/tmp/kubelet-dra-real-kubelet.lock")
"""One real kubelet per machine (it always serves /var/lib/kubelet/device-plugins/kubelet.sock): every test or
benchmark that starts one holds this lock, so test workers and parallel runs take turns."""


@attrs.frozen
class RealKubelet:
    """A running real kubelet 1.36.2 on the fake container runtime, started by ``start-kubelet``."""

    node: str
    dir: Path
    root_dir: Path
    registry_dir: Path
    plugins_dir: Path
    checkpoint: Path
    kubelet_log: Path

    def log(self) -> str:
        return self.kubelet_log.read_text(errors="replace")


def real_kubelet_missing() -> str | None:
    """Why a real kubelet cannot run here (no programs, not root), or None when it can."""
    if reason := interop_missing():
        return reason
    if os.geteuid() != 0:
        return "the real kubelet needs root (it bind-mounts its root dir)"
    return None


@contextlib.contextmanager
def real_kubelet_turn() -> Iterator[None]:
    """Hold the machine-wide lock: a real kubelet may run inside (started here or by a ``replay --real-kubelet``)."""
    with REAL_KUBELET_LOCK.open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@contextlib.contextmanager
def real_kubelet(plane: RealControlPlane, node: str, env: dict[str, str] | None = None) -> Iterator[RealKubelet]:
    """Start the real kubelet as ``node`` of ``plane`` under the machine-wide lock; stop it (and the fake runtime)
    on exit. Restart it inside with :func:`restart_real_kubelet`."""
    with real_kubelet_turn():
        try:
            yield start_real_kubelet(plane, node, env)
        finally:
            stop_real_kubelet(plane, node)


def start_real_kubelet(plane: RealControlPlane, node: str, env: dict[str, str] | None = None) -> RealKubelet:
    """``start-kubelet``; call it only under :data:`REAL_KUBELET_LOCK` (see :func:`real_kubelet`)."""
    result = subprocess.run(
        [str(INTEROP_DIR / "start-kubelet"), str(plane.dir), node],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **(env or {})},
        check=False,
    )
    if result.returncode != 0:
        raise InteropError(f"the real kubelet did not start: {result.stderr.strip()[-3000:]}")
    info = json.loads(result.stdout.strip().splitlines()[-1])
    return RealKubelet(
        node=node,
        dir=Path(info["dir"]),
        root_dir=Path(info["root_dir"]),
        registry_dir=Path(info["registry_dir"]),
        plugins_dir=Path(info["plugins_dir"]),
        checkpoint=Path(info["checkpoint"]),
        kubelet_log=Path(info["kubelet_log"]),
    )


def restart_real_kubelet(
    plane: RealControlPlane, node: str, env: dict[str, str] | None = None, *, kill: bool = False
) -> RealKubelet:
    """Stop the kubelet (SIGKILL with ``kill``: a crash) and start it again on the same root dir and runtime; call it
    only inside :func:`real_kubelet`."""
    stop_real_kubelet(plane, node, kubelet_only=True, kill=kill)
    return start_real_kubelet(plane, node, env)


def stop_real_kubelet(plane: RealControlPlane, node: str, *, kubelet_only: bool = False, kill: bool = False) -> None:
    """``stop-kubelet``: SIGTERM (``kill``: SIGKILL, a crash); ``kubelet_only`` keeps the fake runtime's pods."""
    subprocess.run(
        [str(INTEROP_DIR / "stop-kubelet"), str(plane.dir), node, *(["--kubelet-only"] if kubelet_only else [])],
        capture_output=True,
        timeout=120,
        env={**os.environ, "SIGKILL": "1" if kill else "0"},
        check=False,
    )


def gpu_pod_manifests(driver: str, node: str | None) -> list[dict[str, Any]]:
    """The DeviceClass of ``driver``, a template ``one-gpu`` and pod ``gpu-pod`` (container ``c``) claiming from
    it: bound to ``node``, or left for the scheduler to place when ``node`` is ``None``."""
    pod = manifests.pod("gpu-pod", node or "", templates={"gpu": "one-gpu"}, containers=("c",))
    if node is None:
        del pod["spec"]["nodeName"]
    return [manifests.device_class(driver), manifests.claim_template("one-gpu", driver, requests=("gpu",)), pod]
