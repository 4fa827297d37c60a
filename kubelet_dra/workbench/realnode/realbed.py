"""``RealTestbed``: the testbed with its node played by a real kubelet, its drivers behind a recording tap.

Everything else is the testbed's own (work dir, embedded API server or a real cluster, the offline
control plane, driver processes), so scenario steps act the same on both backends. Drivers register
in the bed's registry dir; the tap mirrors each registration into the kubelet's and records every
call, which is what call expectations read. The checkpoint is the kubelet's own file in its root dir.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NoReturn

from kubelet_dra.peers.api.calls import CallRecord, CallRecorder
from kubelet_dra.peers.errors import StateError, UsageError
from kubelet_dra.workbench.realnode import realcdi as cdi
from kubelet_dra.workbench.realnode.realkubelet import RealKubelet, RealKubeletOptions
from kubelet_dra.workbench.tap import FaultProxy, TapThread
from kubelet_dra.workbench.tap.mirror import GET_INFO
from kubelet_dra.workbench.testbed import Testbed, TestbedOptions

NOTIFY = "NotifyRegistrationStatus"
REGISTERED_LINE = re.compile(
    r'"Registered DRA plugin".* driverName="(?P<driver>[^"]+)".* chosenService="(?P<service>[^"]+)"'
)
"""The real kubelet's own words for a registration (at -v 4 and up), with the service it chose to call."""


class RealTestbed(Testbed):
    """``async with RealTestbed(options, real):`` a testbed whose node is ``real``'s kubelet."""

    __test__ = False  # not a pytest test class
    seen_from = "the tap's NotifyRegistrationStatus, the kubelet's log"
    """Where ``registered`` and ``chosen_service`` look."""

    def __init__(self, options: TestbedOptions, real: RealKubeletOptions) -> None:
        real.check()
        if options.registry_dir is not None:
            raise UsageError("a scenario's registryDir cannot be used with --real-kubelet", fix="leave it out")
        super().__init__(options, proxies=FaultProxy)
        kubeconfig = Path(real.kubeconfig) if real.kubeconfig else self.kubeconfig
        self.kubelet = RealKubelet(real, options.node_name, self.workdir, kubeconfig)
        self.registry_dir = self.workdir / "drivers"
        """Where drivers register: the tap's side; the kubelet watches its own registry dir in its root dir."""
        self.state_dir = self.kubelet.root_dir
        self.recorder = CallRecorder(self.workdir / "calls.jsonl")
        self._tap: TapThread | None = None
        """On a loop of its own: its answers must not wait for the replay's (kubelet_dra.workbench.tap.tapthread)."""

    @property
    def node(self) -> NoReturn:
        raise StateError("the node is a real kubelet: its insides cannot be read", fix="look at what it shows outside")

    @property
    def node_running(self) -> bool:
        """No simulated node runs here (the real kubelet is :attr:`kubelet`)."""
        return False

    async def start_node(self) -> None:  # type: ignore[override]
        """Start the kubelet (and, the first time, its runtime and the tap) once its Node is Ready."""
        if self.kubelet.running:
            return
        if self._tap is None:
            await self.kubelet.start_runtime()
        await self.kubelet.start(self.kube)
        if self._tap is None:
            self._tap = TapThread.mirroring(
                self.registry_dir, self.kubelet.registry_dir, socket_dir=self.workdir / "tap", recorder=self.recorder
            )
            await self._tap.start()

    async def stop_node(self, *, crash: bool = False) -> None:
        """Stop the kubelet (SIGTERM; SIGKILL for a ``crash``); its root dir, the runtime's pods and the tap stay."""
        await self.kubelet.stop(kill=crash)

    async def restart_node(self, options: object = None, *, crash: bool = False) -> None:  # type: ignore[override]
        if options is not None:
            raise UsageError("a real kubelet restarts as the same binary", fix="replay with another --real-kubelet")
        await self.stop_node(crash=crash)
        await self.start_node()

    async def _close(self, *, failed: bool) -> None:
        for driver in reversed(self.drivers):
            await driver.stop()
        await self.kubelet.stop()
        if self._tap is not None:
            await self._tap.stop()
        await self.kubelet.stop_runtime()
        await super()._close(failed=failed)

    def calls(self, *, driver: str | None = None, method: str | None = None) -> list[CallRecord]:
        """The calls the kubelet made to the drivers through the tap, across its restarts."""
        return self.recorder.records(driver=driver, method=method)

    def registered(self, driver_name: str) -> int:
        """How many of the driver's registration sockets the kubelet accepted, as the tap saw it: the last
        NotifyRegistrationStatus to each live socket whose GetInfo named the driver said registered. Only calls
        since the socket's mirror began count: a restarted driver's socket has the same path, and the kubelet's
        word to the driver that was there before is not a registration of the new one."""
        since = {mirror.driver_socket: mirror.since for mirror in self._tap.mirrors()} if self._tap else {}
        named: set[str] = set()
        last: dict[str, bool] = {}
        for record in self.recorder.records():
            if record.endpoint not in since or record.started_at < since[record.endpoint]:
                continue
            if record.method == GET_INFO and (record.response or {}).get("name") == driver_name:
                named.add(record.endpoint)
            elif record.method.endswith(NOTIFY):
                last[record.endpoint] = bool(record.request.get("plugin_registered"))
        return sum(1 for endpoint in named if last.get(endpoint))

    def reachable(self, driver_name: str) -> bool:
        """Whether the kubelet can call the driver: it says it has a connection to the driver's endpoint (served by
        the tap only while the tap reaches the driver's, ``kubelet_dra.workbench.tap.reach``). The tap serving is not
        enough: a kubelet whose dials failed reconnects on its gRPC back-off, seconds later."""
        return driver_name in self.kubelet.connected()

    def chosen_service(self, driver_name: str) -> str | None:
        """The DRA service the kubelet chose at the driver's last registration, from its log."""
        services = [
            match["service"]
            for line in self.kubelet.log_path.read_text(errors="replace").splitlines()
            if (match := REGISTERED_LINE.search(line)) and match["driver"] == driver_name
        ]
        return services[-1] if services else None

    def log_excerpt(self, lines: int) -> str:
        """The kubelet log's last ``lines`` lines, named, for a failure report."""
        return f"log of the real kubelet ({self.kubelet.log_path}):\n{self.kubelet.log_tail(lines)}"

    def start_note(self) -> str:
        return f"real kubelet pid {self.kubelet.pid} Ready (its start-up wipe is its own)"

    def cdi_devices(self, namespace: str, pod: str, container: str) -> list[str] | None:
        """The CDI device IDs the runtime received for the container's last creation in the pod's last sandbox
        (the kubelet's log names the sandbox, the fake CRI's log the devices); ``None`` before it is created."""
        sandbox = cdi.pod_sandbox(self.kubelet.log_path, namespace, pod)
        return None if sandbox is None else cdi.container_devices(self.kubelet.runtime_log, sandbox, container)
