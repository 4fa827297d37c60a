"""A real kubelet process and its container runtime, started and restarted as a node of a scenario.

The kubelet binary is the user's (any build); the runtime is any CRI server started from a command
with a ``{cri_socket}`` placeholder (Kubernetes' fake CRI runs pods with no containers). The
kubelet's configuration is written here, not taken from a script: the settings a kubelet needs to
run unprivileged parts off (no cgroups per QoS, no eviction, no swap check) on any machine. A
restart keeps the root dir (checkpoint, registry dir) and the runtime with its pods, as a kubelet
restart on a real node does.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import re
import shlex
import signal
import socket
import subprocess
import time
from pathlib import Path

import attrs
import yaml

from kubelet_dra.peers.errors import StateError, UsageError
from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.peers.log import get_logger
from kubelet_dra.workbench.tap.owned import listening
from kubelet_dra.workbench.testbed import objects

DEVICE_PLUGIN_SOCKET = Path("/var/lib/kubelet/device-plugins/kubelet.sock")
"""Every kubelet serves this fixed path whatever its root dir: two on one machine take it from each other."""
CRI_PLACEHOLDER = "{cri_socket}"
STOP_GRACE = 10.0
READY_TIMEOUT = 90.0
SOCKET_TIMEOUT = 10.0
VERSION = re.compile(r"Kubernetes v(?P<release>\d+\.\d+)\.")
START_MARK = "==== kubelet-dra replay: kubelet start"
"""Written to the kubelet's log before each start: what follows is that process's."""
WIPE_LINE = re.compile(
    r'"(?P<what>Adding TimedWorkerQueue item|Cancelling TimedWorkerQueue item|Firing worker)[^"]*"'
    r'.* item="/(?P<driver>[^"]+)"'
)
"""The DRA registration handler's wipe timers in the kubelet's log (its timed work queue, keyed "/<driver>", at -v 4
and up): armed when a driver has no connected instance, cancelled when one connects, fired after the wiping delay."""
ARMED = "Adding TimedWorkerQueue item"
CONNECTION_LINE = re.compile(
    r'"Connection changed".* driverName="(?P<driver>[^"]+)" endpoint="(?P<endpoint>[^"]+)" connected=(?P<up>true|false)'
)
"""The DRA registration handler's word on a driver instance's gRPC connection (at -v 2 and up): the kubelet can call
the driver only while one of its instances is connected."""
TEST_NET_IP = "192.0.2.10"
"""The node IP when the machine has no route out (the kubelet refuses a loopback one; nothing dials it)."""


@attrs.frozen
class RealKubeletOptions:
    """How to run the real kubelet: its binary, the runtime's command, and optionally a real cluster."""

    kubelet: str
    cri_cmd: str
    kubeconfig: str | None = None
    """A real control plane's kubeconfig (the node's identity); the embedded API server's admin otherwise."""
    verbosity: int = 4
    """klog -v of the kubelet: at 4 it logs registration, prepare, unprepare and wipes."""

    def release(self) -> str:
        """The binary's release (``1.36``) from ``kubelet --version``; a file that is not a kubelet is a usage error."""
        if not (os.path.isfile(self.kubelet) and os.access(self.kubelet, os.X_OK)):
            raise UsageError(f"--real-kubelet {self.kubelet} is not an executable file", fix="give the kubelet binary")
        result = subprocess.run([self.kubelet, "--version"], capture_output=True, text=True, timeout=30, check=False)
        found = VERSION.search(result.stdout)
        if result.returncode != 0 or found is None:
            raise UsageError(
                f"--real-kubelet {self.kubelet} --version did not say a Kubernetes version", fix="give a kubelet binary"
            )
        return found["release"]

    def check(self) -> None:
        """Refuse what cannot work before anything starts: a clear reason and fix, never a kubelet's crash."""
        self.release()
        if CRI_PLACEHOLDER not in self.cri_cmd:
            raise UsageError(
                f"--cri-cmd {self.cri_cmd!r} has no {CRI_PLACEHOLDER} placeholder",
                fix="write where the runtime listens as {cri_socket}, e.g. 'fake-cri -listen unix://{cri_socket}'",
            )
        if os.geteuid() != 0:
            raise UsageError("the real kubelet needs root (it bind-mounts its root dir)", fix="run the replay as root")
        if listening(DEVICE_PLUGIN_SOCKET):
            raise UsageError(
                f"another kubelet already serves {DEVICE_PLUGIN_SOCKET}",
                fix="one real kubelet per machine: stop it (or wait for the run that holds it) and replay again",
            )


def armed_wipes(log: str) -> list[str]:
    """The drivers whose ResourceSlice wipe a kubelet's log (one process's) shows armed and neither cancelled nor
    fired."""
    armed: dict[str, bool] = {}
    for match in WIPE_LINE.finditer(log):
        armed[match["driver"]] = match["what"] == ARMED
    return sorted(driver for driver, pending in armed.items() if pending)


def connected_drivers(log: str) -> list[str]:
    """The drivers a kubelet's log (one process's) shows with an instance connected now."""
    connected: dict[tuple[str, str], bool] = {}
    for match in CONNECTION_LINE.finditer(log):
        connected[match["driver"], match["endpoint"]] = match["up"] == "true"
    return sorted({driver for (driver, _), up in connected.items() if up})


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def node_ip() -> str:
    """The address the machine reaches out from (no packet is sent), or a documentation address."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
            address = str(probe.getsockname()[0])
        except OSError:
            return TEST_NET_IP
    return TEST_NET_IP if address.startswith("127.") else address


class RealKubelet:
    """``start_runtime`` once, then ``start``/``stop`` the kubelet as often as the scenario restarts it."""

    def __init__(self, options: RealKubeletOptions, node_name: str, workdir: Path, kubeconfig: Path) -> None:
        self.options = options
        self.node_name = node_name
        self.dir = workdir / "kubelet"
        self.root_dir = self.dir / "root"
        self.registry_dir = self.root_dir / "plugins_registry"
        self.checkpoint = self.root_dir / "dra_manager_state"
        self.log_path = self.dir / "kubelet.log"
        self.runtime_log = self.dir / "cri.log"
        """The runtime's output: Kubernetes' fake CRI logs each CreateContainer with its CDI devices there."""
        self.kubeconfig = Path(options.kubeconfig) if options.kubeconfig else kubeconfig
        self.cri_socket = self.dir / "cri.sock"
        self.starts = 0
        self._kubelet: asyncio.subprocess.Process | None = None
        self._runtime: asyncio.subprocess.Process | None = None
        self._log = get_logger("realkubelet", node=node_name)

    def log_tail(self, lines: int) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def pending_wipes(self) -> list[str]:
        """The drivers whose ResourceSlices the running kubelet will wipe unless they become usable first, from its
        log since its last start (its timers die with the process)."""
        return armed_wipes(self._this_start())

    def connected(self) -> list[str]:
        """The drivers the running kubelet has a connection to, from its log since its last start."""
        return connected_drivers(self._this_start())

    def _this_start(self) -> str:
        """The running kubelet's log since its start ("" when it does not run)."""
        with contextlib.suppress(OSError):
            text = self.log_path.read_text(errors="replace")
            return text[max(text.rfind(START_MARK), 0) :] if self.running else ""
        return ""

    @property
    def running(self) -> bool:
        return self._kubelet is not None and self._kubelet.returncode is None

    @property
    def pid(self) -> int | None:
        return self._kubelet.pid if self._kubelet is not None else None

    async def start_runtime(self) -> None:
        for sub in ("cwd", "images"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        command = shlex.split(self.options.cri_cmd.replace(CRI_PLACEHOLDER, str(self.cri_socket)))
        self._runtime = await _spawn(command, self.runtime_log, self.dir)
        deadline = time.monotonic() + SOCKET_TIMEOUT
        while not self.cri_socket.is_socket():
            if self._runtime.returncode is not None or time.monotonic() > deadline:
                raise StateError(
                    f"the container runtime did not listen on {self.cri_socket}",
                    where=str(self.runtime_log),
                    fix="check --cri-cmd: " + _tail(self.runtime_log),
                )
            await asyncio.sleep(0.05)

    async def start(self, kube: KubeClient) -> None:
        """Start the kubelet and return once its Node is Ready with a heartbeat of this start."""
        config = self.dir / "kubelet-config.yaml"
        config.write_text(yaml.safe_dump(self._configuration(), sort_keys=False))
        self.root_dir.mkdir(parents=True, exist_ok=True)
        started = time.time()
        command = [
            self.options.kubelet,
            f"--config={config}",
            f"--kubeconfig={self.kubeconfig}",
            f"--root-dir={self.root_dir}",
            f"--cert-dir={self.root_dir / 'pki'}",
            f"--hostname-override={self.node_name}",
            f"--node-ip={node_ip()}",
            f"--v={self.options.verbosity}",
        ]
        with self.log_path.open("a") as log:
            log.write(f"{START_MARK} {self.starts + 1}\n")
        self._kubelet = await _spawn(command, self.log_path, self.dir / "cwd")
        self.starts += 1
        self._log.v(1).info("Real kubelet started", pid=self._kubelet.pid, rootDir=str(self.root_dir))
        await self._wait_ready(kube, started)

    async def _wait_ready(self, kube: KubeClient, since: float) -> None:
        deadline = time.monotonic() + READY_TIMEOUT
        while not await self._ready(kube, since):
            if not self.running or time.monotonic() > deadline:
                why = "exited" if not self.running else f"was not Ready within {READY_TIMEOUT:g} s"
                raise StateError(
                    f"the real kubelet {why}", where=str(self.log_path), fix="read its log: " + _tail(self.log_path)
                )
            await asyncio.sleep(0.2)

    async def _ready(self, kube: KubeClient, since: float) -> bool:
        with contextlib.suppress(Exception):  # the API server may be down or the Node not registered yet
            node = await objects.get(kube, "Node", self.node_name)
            for condition in ((node or {}).get("status") or {}).get("conditions") or []:
                if condition.get("type") == "Ready" and condition.get("status") == "True":
                    beat = datetime.datetime.fromisoformat(condition["lastHeartbeatTime"].replace("Z", "+00:00"))
                    return beat.timestamp() >= int(since)
        return False

    async def stop(self, *, kill: bool = False) -> int | None:
        """SIGTERM (SIGKILL after a grace, or at once with ``kill``: a crash); the root dir and the runtime stay,
        as on a node whose kubelet restarts."""
        process, self._kubelet = self._kubelet, None
        code = await _end(process, signal.SIGKILL if kill else signal.SIGTERM)
        if kill and process is not None:
            self._log.v(1).info("Real kubelet killed", pid=process.pid, exitCode=code)
        self._unmount()
        return code

    async def stop_runtime(self) -> None:
        process, self._runtime = self._runtime, None
        await _end(process)

    def _unmount(self) -> None:
        """The kubelet bind-mounts its root dir onto itself and leaves the mount when it stops."""
        for _ in range(5):
            if not any(line.split()[1] == str(self.root_dir) for line in Path("/proc/mounts").read_text().splitlines()):
                return
            if subprocess.run(["umount", str(self.root_dir)], capture_output=True, check=False).returncode:
                subprocess.run(["umount", "-l", str(self.root_dir)], capture_output=True, check=False)

    def _configuration(self) -> dict[str, object]:
        """A KubeletConfiguration for a test node: local ports, no cgroups or eviction, the given runtime."""
        endpoint = f"unix://{self.cri_socket}"
        return {
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "address": "127.0.0.1",
            "port": _free_port(),
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": _free_port(),
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "containerRuntimeEndpoint": endpoint,
            "imageServiceEndpoint": endpoint,
            "cgroupDriver": "cgroupfs",
            "cgroupsPerQOS": False,
            "enforceNodeAllocatable": ["none"],
            "failSwapOn": False,
            "failCgroupV1": False,
            "localStorageCapacityIsolation": False,
            "resolvConf": "",
            "registerNode": True,
            "evictionHard": {},
            "mergeDefaultEvictionSettings": False,
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "makeIPTablesUtilChains": False,
            "serializeImagePulls": False,
            "kubeAPIQPS": 50,
            "kubeAPIBurst": 100,
            "podLogsDir": str(self.root_dir / "pod-logs"),
        }


async def _spawn(command: list[str], log_path: Path, cwd: Path) -> asyncio.subprocess.Process:
    with log_path.open("ab") as log:
        try:
            return await asyncio.create_subprocess_exec(
                *command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=cwd, start_new_session=True
            )
        except OSError as err:
            raise UsageError(f"cannot run {command[0]}: {err.strerror}", fix="check the command") from err


async def _end(process: asyncio.subprocess.Process | None, sig: int = signal.SIGTERM) -> int | None:
    if process is None or process.returncode is not None:
        return None if process is None else process.returncode
    process.send_signal(sig)
    try:
        return await asyncio.wait_for(process.wait(), STOP_GRACE)
    except TimeoutError:
        process.kill()
        return await process.wait()


def _tail(path: Path, lines: int = 3) -> str:
    with contextlib.suppress(OSError):
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:]) or "(empty)"
    return "(no log)"
