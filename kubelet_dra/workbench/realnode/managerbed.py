"""``ManagerTestbed``: the testbed with its node played by the real kubelet's DRA manager (``dra-manager-harness``).

The harness is the kubelet's own plugin manager, DRA registration handler and DRA manager (``pkg/kubelet/cm/dra``)
in one program. ``-mode serve`` is the node: it registers the drivers of the registry dir, opens their health
streams, wipes the node's ResourceSlices at start and after the wiping delay, and runs until stopped, so a
``restartNode`` restarts it. Each ``prepare``/``unprepare`` step by hand is one run of ``-mode prepare|unprepare``
for the pod on the same registry and state dirs: the real ``PrepareResources``/``UnprepareResources`` on the
checkpoint the steps share, which that run's manager loads at its start as a restarted kubelet does.

Everything is seen from outside: calls from the harness's own wire-level trace (the node's registration and
health calls, each step's DRA calls: a step's own registration handshake is the harness's, not a kubelet's), the
checkpoint in the state dir, the CDI devices a prepare printed. It runs no pod worker: pods bound to the node are
refused before the replay (``kubelet_dra.workbench.scenarios.onrealkubelet``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any, NoReturn

import attrs

from kubelet_dra.peers.api.calls import CallRecord
from kubelet_dra.peers.errors import StateError, UsageError
from kubelet_dra.peers.log import get_logger
from kubelet_dra.workbench.realnode.harnesstrace import REGISTRATION_SERVICE, HarnessTrace, read_outcome, read_trace
from kubelet_dra.workbench.tap import FaultProxy
from kubelet_dra.workbench.testbed import Testbed, TestbedOptions, objects

HEALTH_SERVICE = "DRAResourceHealth/"
STOP_GRACE = 10.0
WIPE_WAIT = 5.0
"""Seconds the start waits for the harness's start-up wipe, as the simulated node's start waits for its own."""
REGISTER_TIMEOUT = "30s"


@attrs.frozen
class RealManagerOptions:
    """The harness binary: the real kubelet's DRA manager, driven by flags (``../shared/interop``'s README)."""

    harness: str

    def check(self) -> None:
        if not (os.path.isfile(self.harness) and os.access(self.harness, os.X_OK)):
            raise UsageError(
                f"--real-manager {self.harness} is not an executable file", fix="give the dra-manager-harness binary"
            )


@attrs.frozen
class _Run:
    """One harness process's trace file and start, and whether it is the node (``serve``) or a step."""

    trace: Path
    started: float
    node: bool


class ManagerTestbed(Testbed):
    """``async with ManagerTestbed(options, manager):`` a testbed whose node is the real DRA manager."""

    __test__ = False  # not a pytest test class
    seen_from = "the real DRA manager's trace"
    """Where ``registered`` and ``chosen_service`` look."""

    def __init__(self, options: TestbedOptions, manager: RealManagerOptions) -> None:
        manager.check()
        if options.registry_dir is not None:
            raise UsageError("a scenario's registryDir cannot be used with --real-manager", fix="leave it out")
        super().__init__(options, proxies=FaultProxy)
        self.manager = manager
        self.log_path = self.workdir / "manager.log"
        self._serve: asyncio.subprocess.Process | None = None
        self._runs: list[_Run] = []
        self._cdi: dict[str, list[str]] = {}
        self._log = get_logger("realmanager", node=options.node_name)

    @property
    def node(self) -> NoReturn:
        raise StateError("the node is the real DRA manager: its insides cannot be read", fix="look at what it shows")

    @property
    def node_running(self) -> bool:
        return False

    def _command(self, mode: str, trace: Path, *extra: str) -> list[str]:
        return [
            self.manager.harness,
            *("-mode", mode, "-trace", "-trace-file", str(trace), *extra),
            *("-registry-dir", str(self.registry_dir), "-state-dir", str(self.state_dir)),
            *("-node-name", self.options.node_name, "-kubeconfig", str(self.kubeconfig)),
            *("-register-timeout", REGISTER_TIMEOUT),
        ]

    async def start_node(self) -> None:  # type: ignore[override]
        """Start ``serve`` once the Node exists (a kubelet registers it; drivers need it to publish), and return
        after its start-up wipe."""
        if self._serve is not None and self._serve.returncode is None:
            return
        node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": self.options.node_name}}
        await objects.apply(self.kube, node)
        run = _Run(self.workdir / f"node-{len(self._runs) + 1}.trace", time.time(), node=True)
        self._runs.append(run)
        with self.log_path.open("ab") as log:
            self._serve = await asyncio.create_subprocess_exec(
                *self._command("serve", run.trace),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        self._log.v(1).info("Real DRA manager started", pid=self._serve.pid, stateDir=str(self.state_dir))
        deadline = time.monotonic() + WIPE_WAIT
        while not self._trace(run).wiped_at_start and time.monotonic() < deadline:
            if self._serve.returncode is not None:
                raise StateError(
                    f"dra-manager-harness exited with code {self._serve.returncode}",
                    where=str(self.log_path),
                    fix="read its log: " + self._tail(3).replace("\n", " | "),
                )
            await asyncio.sleep(0.05)

    async def stop_node(self, *, crash: bool = False) -> None:
        """Stop ``serve`` (SIGTERM; SIGKILL for a ``crash``); the checkpoint in the state dir stays."""
        process, self._serve = self._serve, None
        if process is None or process.returncode is not None:
            return
        process.send_signal(signal.SIGKILL if crash else signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), STOP_GRACE)
        except TimeoutError:
            process.kill()
            await process.wait()

    async def restart_node(self, options: object = None, *, crash: bool = False) -> None:  # type: ignore[override]
        if options is not None:
            raise UsageError("the real DRA manager restarts as the same binary", fix="replay with another one")
        await self.stop_node(crash=crash)
        await self.start_node()

    async def by_hand(self, pod: dict[str, Any], *, unprepare: bool) -> str:
        """The real ``PrepareResources`` (or ``UnprepareResources``) of ``pod``: its error, empty on success."""
        meta = pod["metadata"]
        name = f"{meta['namespace']}/{meta['name']}"
        mode = "unprepare" if unprepare else "prepare"
        run = _Run(self.workdir / f"step-{len(self._runs) + 1}-{mode}.trace", time.time(), node=False)
        self._runs.append(run)
        command = self._command(mode, run.trace, "-pod", name, "-wipe-slices=false")
        process = await asyncio.create_subprocess_exec(
            *command, stdin=subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
        )
        try:
            stdout, stderr = await process.communicate()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        with self.log_path.open("ab") as log:
            log.write(stdout + stderr)
        outcome = read_outcome(stdout.decode(errors="replace"))
        if outcome.error is None:
            words = " | ".join(stderr.decode(errors="replace").strip().splitlines()[-3:])
            raise StateError(f"dra-manager-harness -mode {mode} exited {process.returncode}: {words}")
        prefix = f"{name}/"
        self._cdi = {key: ids for key, ids in self._cdi.items() if not key.startswith(prefix)}
        if not unprepare:
            self._cdi.update(outcome.cdi)
        return outcome.error

    def _trace(self, run: _Run) -> HarnessTrace:
        with contextlib.suppress(OSError):
            return read_trace(run.trace.read_text(errors="replace").splitlines(), run.started)
        return HarnessTrace()

    def calls(self, *, driver: str | None = None, method: str | None = None) -> list[CallRecord]:
        """The calls a kubelet would make, in completion order: the node's (registration, health streams), and
        the DRA calls of each step by hand."""
        found = [
            record
            for run in self._runs
            for record in self._trace(run).calls
            if run.node or not (record.method.startswith(REGISTRATION_SERVICE) or HEALTH_SERVICE in record.method)
        ]
        return sorted(
            (
                record
                for record in found
                if (driver is None or record.driver == driver)
                and (method is None or record.method == method or record.method.endswith(f"/{method}"))
            ),
            key=lambda record: record.started_at + record.duration,
        )

    def _node_trace(self) -> HarnessTrace:
        nodes = [run for run in self._runs if run.node]
        return self._trace(nodes[-1]) if nodes and self._serve is not None else HarnessTrace()

    def registered(self, driver_name: str) -> int:
        """How many instances of the driver the running node has registered (its DRA handler's log lines)."""
        return sum(1 for entry in self._node_trace().registrations.values() if entry.driver == driver_name)

    def reachable(self, driver_name: str) -> bool:
        """Whether the node's connection to one of the driver's instances is up."""
        return any(e.connected for e in self._node_trace().registrations.values() if e.driver == driver_name)

    def chosen_service(self, driver_name: str) -> str | None:
        services = [e.service for e in self._node_trace().registrations.values() if e.driver == driver_name]
        return services[-1] if services else None

    def cdi_devices(self, namespace: str, pod: str, container: str) -> list[str] | None:
        """The CDI device IDs the last prepare of the pod gave the container (``None``: none since, or unprepared)."""
        return self._cdi.get(f"{namespace}/{pod}/{container}")

    def _tail(self, lines: int) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        return ""

    def log_excerpt(self, lines: int) -> str:
        """The harness's log's last ``lines`` lines, named, for a failure report."""
        return f"log of the real DRA manager ({self.log_path}):\n{self._tail(lines)}"

    def start_note(self) -> str:
        pid = self._serve.pid if self._serve is not None else None
        return f"real DRA manager pid {pid} started (its start-up wipe is its own)"

    async def _close(self, *, failed: bool) -> None:
        for driver in reversed(self.drivers):
            with contextlib.suppress(Exception):
                await driver.stop()
        await self.stop_node()
        await super()._close(failed=failed)
