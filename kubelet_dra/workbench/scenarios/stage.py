"""What steps and expectations act on while a scenario replays: the testbed, the driver processes, lookups.

One place maps a scenario's driver ids to processes and names, builds the reference driver's
command line (with the run's fault overrides), and finds pods and a driver's sockets, so the
step actions and the expectation checks stay small.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubelet_dra.kubelet.cm.dra.plugin import PluginInstance
from kubelet_dra.peers.errors import UsageError
from kubelet_dra.workbench.realnode import ManagerTestbed, RealTestbed
from kubelet_dra.workbench.scenarios.model import DriverDef, Scenario
from kubelet_dra.workbench.testbed import DriverProcess, DriverSpec, Testbed, objects
from kubelet_dra.workbench.testbed.objects import DEFAULT_NAMESPACE

HIDDEN_PREFIX = ".removed-"
"""A removed socket is kept as a hidden hard link (the watcher ignores dot files) so it can be restored."""


def driver_spec(driver: DriverDef, faults: Mapping[str, str], *, faulted: bool = False) -> DriverSpec:
    """How the testbed starts ``driver``; ``faults`` override the knobs from the file. A driver of a command runs
    behind the fault proxy when it has knobs or a step sets some (``faulted``); without, nothing comes between."""
    if driver.command is not None:
        knobs = {**driver.faults, **faults}
        return DriverSpec(
            driver.name,
            command=driver.command,
            env=driver.env,
            label=driver.id,
            proxied=bool(knobs) or faulted,
            wire_faults=knobs,
        )
    reference = driver.reference
    assert reference is not None, "external drivers are not started"
    args: list[str] = []
    if reference.devices is not None:
        args += ["--devices", str(reference.devices)]
    if reference.health:
        args += ["--health"]
    if reference.health_interval is not None:
        args += ["--health-interval", f"{reference.health_interval:g}"]
    if reference.republish_delay is not None:
        args += ["--republish-delay", f"{reference.republish_delay:g}"]
    knobs = dict(reference.faults)
    if reference.versions is not None:
        knobs.setdefault("versions", reference.versions)
    for knob, value in {**knobs, **faults}.items():
        args += [f"--fault-{knob}", value]
    return DriverSpec(driver.name, extra_args=(*args, *reference.args), env=driver.env, label=driver.id)


def faulted(scenario: Scenario, driver_id: str) -> bool:
    """Whether a step sets the driver's knobs, or an expectation reads the calls they hold."""
    steps = [step for step in scenario.steps if step.action == "fault" and step.args["driver"] == driver_id]
    held = [
        c for step in scenario.steps for c in step.conditions if c.kind == "blocked" and c.args["driver"] == driver_id
    ]
    return bool(steps or held)


class Context:
    """The running scenario: ``bed``, driver processes by id, and the lookups steps and checks share."""

    def __init__(self, scenario: Scenario, bed: Testbed, faults: Mapping[str, Mapping[str, str]]) -> None:
        self.scenario = scenario
        self.bed = bed
        self.processes: dict[str, DriverProcess] = {}
        self.earlier: dict[str, list[PluginInstance]] = {}
        """By driver name, the simulated node's instances registered before the driver's current process started."""
        self._removed: dict[tuple[str, str], Path] = {}
        for driver in scenario.drivers:
            if not driver.external:
                spec = driver_spec(driver, faults.get(driver.id, {}), faulted=faulted(scenario, driver.id))
                self.processes[driver.id] = bed.driver_process(spec)

    @property
    def real(self) -> RealTestbed | ManagerTestbed | None:
        """The testbed when a real kubelet, or the real kubelet's DRA manager, plays the node (seen from outside)."""
        return self.bed if isinstance(self.bed, RealTestbed | ManagerTestbed) else None

    @property
    def node_name(self) -> str:
        return self.bed.options.node_name

    def driver_name(self, driver_id: str) -> str:
        return self.scenario.driver(driver_id).name

    def registered_instances(self, driver_name: str) -> list[PluginInstance]:
        """The simulated node's instances of the driver registered since its current process started: a restarted
        driver's socket has the same path, and until the node sees the socket re-created, the connection it keeps
        to the path reaches the new process; that registration is the old process's, not one of the new (as the
        real kubelet's registrations count from the tap's new mirror on)."""
        return self.bed.instances_since(driver_name, self.earlier.get(driver_name, []))

    async def start_process(self, driver_id: str, *, restart: bool = False) -> DriverProcess:
        """Start (or stop and start) the driver's process; the node's registrations of it until then are left behind."""
        process = self.process(driver_id)
        if self.real is None:  # its instances: those whose endpoint is in its plugin dir (another may share its name)
            name = self.driver_name(driver_id)
            own = [i for i in self.bed.node.instances(name) if Path(i.endpoint).is_relative_to(process.plugin_dir)]
            self.earlier[name] = [*self.earlier.get(name, []), *own]
        await (process.restart() if restart else process.start())
        return process

    def process(self, driver_id: str) -> DriverProcess:
        try:
            return self.processes[driver_id]
        except KeyError:
            raise UsageError(f"driver {driver_id!r} is external", fix="control it outside the scenario") from None

    async def pod(self, args: Mapping[str, Any]) -> dict[str, Any] | None:
        """The pod named by a step's ``pod``/``namespace`` as the API server has it now."""
        return await objects.get(self.bed.kube, "Pod", args["pod"], args.get("namespace") or DEFAULT_NAMESPACE)

    def sockets(self, driver_id: str) -> dict[str, Path]:
        """The driver's registration and service socket paths, from what the node saw (or the usual names). A proxied
        driver's are its own, behind the proxy: the proxy's mirrors follow them as a node follows a driver's."""
        name = self.driver_name(driver_id)
        process = self.processes.get(driver_id)
        if process is not None and process.proxy is not None:
            return {"service": process.plugin_dir / "dra.sock", **process.proxy.driver_sockets(name)}
        found: dict[str, Path] = {"registration": self.bed.registry_dir / f"{name}-reg.sock"}
        for state in self.bed.node.registrations() if self.bed.node_running else []:
            if state.name == name:
                found["registration"] = Path(state.socket_path)
                if state.endpoint:
                    found["service"] = Path(state.endpoint)
        if "service" not in found and driver_id in self.processes:
            found["service"] = self.processes[driver_id].plugin_dir / "dra.sock"
        return found

    def remove_socket(self, driver_id: str, which: str) -> None:
        path = self.sockets(driver_id)[which]
        hidden = path.with_name(HIDDEN_PREFIX + path.name)
        hidden.unlink(missing_ok=True)
        os.link(path, hidden)
        path.unlink()
        self._removed[(driver_id, which)] = path

    def restore_socket(self, driver_id: str, which: str) -> None:
        path = self._removed.pop((driver_id, which), None) or self.sockets(driver_id)[which]
        hidden = path.with_name(HIDDEN_PREFIX + path.name)
        os.link(hidden, path)
        hidden.unlink()
