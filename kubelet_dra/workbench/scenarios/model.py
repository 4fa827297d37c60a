"""A loaded scenario: what to stage (node, timing, drivers, objects) and the ordered steps with their expectations.

Instances are built by the loader from a file that passed validation, so the step and condition
arguments (``args``) already have the shapes the schema allows; each keeps its file position so
reports can point back at the line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from kubelet_dra.kubelet.cm.dra.plugin import PluginMap
from kubelet_dra.kubelet.kubelet import NodeOptions
from kubelet_dra.kubelet.pod_backoff import PodSyncPeriods
from kubelet_dra.kubelet.release import RELEASES, KubeletRelease

DEFAULT_WITHIN = 10.0
DEFAULT_STEP_TIMEOUT = 30.0
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0}


def seconds(value: float | int | str) -> float:
    """A duration as the schema allows it (``2``, ``500ms``, ``2s``, ``1.5m``) in seconds."""
    if isinstance(value, int | float):
        return float(value)
    for unit in ("ms", "s", "m"):
        if value.endswith(unit):
            return float(value[: -len(unit)]) * _UNITS[unit]
    return float(value)


@attrs.frozen
class Position:
    """Where something is written: 1-based line and column."""

    line: int = 0
    column: int = 0


@attrs.frozen
class NodeSpec:
    name: str = "node-1"
    options: NodeOptions = attrs.field(factory=NodeOptions)
    release_pinned: bool = False
    """The file names its kubelet release; otherwise the replay's ``--kubelet-version`` decides."""
    registry_dir: str | None = None
    kubeconfig: str | None = None
    """A real cluster's API server instead of the embedded one."""
    control_plane: bool = True


@attrs.frozen
class Timing:
    """The scenario's deadlines: per action step, and the default ``within`` of an expectation."""

    step_timeout: float = DEFAULT_STEP_TIMEOUT
    within: float = DEFAULT_WITHIN


@attrs.frozen
class ReferenceOptions:
    devices: int | None = None
    health: bool = False
    health_interval: float | None = None
    republish_delay: float | None = None
    versions: str | None = None
    faults: Mapping[str, str] = attrs.field(factory=dict)
    args: tuple[str, ...] = ()


@attrs.frozen
class DriverDef:
    """One driver of the scenario: the reference driver, any command line, or one already running."""

    id: str
    name: str
    reference: ReferenceOptions | None = None
    command: str | None = None
    external: bool = False
    env: Mapping[str, str] = attrs.field(factory=dict)
    start: bool = True
    faults: Mapping[str, str] = attrs.field(factory=dict)
    """A driver under test's fault knobs at each start, carried out on the wire between it and the node."""


@attrs.frozen
class Condition:
    """One expectation: its kind (``calls``, ``pod``…), arguments, name, deadline and how long it must hold."""

    kind: str
    args: Mapping[str, Any]
    name: str
    within: float
    hold: float = 0.0
    where: Position = Position()
    stretch: float = 0.0
    """For a real driver or a loaded machine: how long the wait may go on past ``within`` (held late, the report
    says the wait was stretched); 0 keeps ``within``."""


@attrs.frozen
class Step:
    """One step: an action with its arguments; ``wait`` and ``expect`` steps carry their conditions."""

    index: int
    action: str
    args: Any
    name: str
    timeout: float
    conditions: tuple[Condition, ...] = ()
    where: Position = Position()


@attrs.frozen
class Scenario:
    path: str
    name: str
    description: str = ""
    tags: tuple[str, ...] = ()
    node: NodeSpec = attrs.field(factory=NodeSpec)
    timing: Timing = attrs.field(factory=Timing)
    drivers: tuple[DriverDef, ...] = ()
    objects: tuple[Mapping[str, Any], ...] = ()
    steps: tuple[Step, ...] = ()

    def driver(self, driver_id: str) -> DriverDef:
        return next(driver for driver in self.drivers if driver.id == driver_id)

    def on(self, kubelet: KubeletRelease) -> Scenario:
        """This scenario on the ``kubelet`` release, unless the file pins its own."""
        if self.node.release_pinned:
            return self
        options = attrs.evolve(self.node.options, release=kubelet)
        return attrs.evolve(self, node=attrs.evolve(self.node, options=options))

    def given_time(self, factor: float) -> Scenario:
        """This scenario on a machine ``factor`` times slower than quiet: each action's timeout ``factor`` times
        longer and each expectation's wait allowed to stretch to ``factor`` times its deadline (held late, the report
        says so). How long a condition must keep holding, and the node's own periods, are what they were."""
        if factor <= 1:
            return self

        def condition(original: Condition) -> Condition:
            return attrs.evolve(original, stretch=max(original.stretch, original.within * factor))

        def step(original: Step) -> Step:
            conditions = tuple(condition(item) for item in original.conditions)
            return attrs.evolve(original, timeout=original.timeout * factor, conditions=conditions)

        return attrs.evolve(self, steps=tuple(step(original) for original in self.steps))


POD_SYNC_KEYS = {"podBackOffPeriod": "back_off_period", "syncFrequency": "sync_frequency"}
"""The pod workers' periods in a file's ``timing`` (``kubelet_dra.kubelet.pod_backoff``), as the kubelet names them."""
RENAMED_TIMING_KEYS = {"podRetryPeriod": "podBackOffPeriod", "podResyncPeriod": "syncFrequency"}
"""Timing keys of earlier versions, still read (with a warning) as the key they were renamed to."""


def node_options(node: Mapping[str, Any], timing: Mapping[str, Any]) -> NodeOptions:
    """The simulated kubelet's options from the file's ``node`` and ``timing`` sections."""
    durations = {
        "wipingDelay": "wiping_delay",
        "callTimeout": "call_timeout",
        "reconcilePeriod": "reconcile_period",
    }
    values: dict[str, Any] = {field: seconds(timing[key]) for key, field in durations.items() if key in timing}
    pod_sync = {field: seconds(timing[key]) for key, field in POD_SYNC_KEYS.items() if key in timing}
    if pod_sync:
        values["pod_sync"] = PodSyncPeriods(**pod_sync)
    flags = {"kubeletTiming": "kubelet_timing", "legacyServices": "legacy_services", "health": "health"}
    values |= {field: bool(node[key]) for key, field in flags.items() if key in node}
    if "pluginMap" in node:
        values["plugin_map"] = PluginMap(node["pluginMap"])
    if "kubeletVersion" in node:
        values["release"] = RELEASES[node["kubeletVersion"]]
    gates = node.get("featureGates") or {}
    if "DRAOptionalNodeOperations" in gates:
        values["optional_node_operations"] = bool(gates["DRAOptionalNodeOperations"])
    return NodeOptions(**values)
