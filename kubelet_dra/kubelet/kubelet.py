"""``Node``: one simulated kubelet's DRA side, the composition root everything else runs in-process.

It wires the registration plugin manager (watcher, reconciler, handshake) to the DRA plugin
manager (instances, gRPC clients, call recorder, health) and the ResourceSlice wiper, and owns
their lifetimes::

    async with Node("node-1", "/tmp/reg", kubeconfig="kubeconfig.yaml") as node:
        await node.wait_for(lambda: node.plugins.instances("gpu.example.com"))

Without a kubeconfig (or ``kube`` client) the node runs standalone, like a kubelet without an
API client: nothing is wiped. With one, the Node object is created if missing (as the kubelet
registers its node) and all of the node's ResourceSlices are wiped at start, in the background.
With a ``state_dir`` as well, the node also runs the pods bound to it: a DRA manager whose
checkpoint lives in that dir prepares and unprepares their claims (``kubelet_dra.kubelet``), and the
device health cache is kept in ``dra_health_state`` there. The kubelet's DRA metrics are always
recorded (``node.metrics_text()``); with a ``metrics_port`` they are also served over HTTP.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from types import TracebackType
from typing import Protocol

import attrs

from kubelet_dra.kubelet.cm.dra import DEFAULT_RECONCILE_PERIOD, Checkpoint, DRAManager
from kubelet_dra.kubelet.cm.dra.plugin import (
    DEFAULT_CALL_TIMEOUT,
    DEFAULT_HEALTH_RESTART_DELAY,
    DEFAULT_WIPING_DELAY,
    PLUGIN_TYPE,
    CallRecorder,
    DRAPluginManager,
    HealthCache,
    PluginInstance,
    PluginMap,
    PluginOptions,
)
from kubelet_dra.kubelet.cm.dra.plugin.resourceslices import ResourceSliceWiper, WipeOutcome
from kubelet_dra.kubelet.metrics.metrics import DRAMetrics, MetricsServer
from kubelet_dra.kubelet.nodestatus import HEARTBEAT_PERIOD, NodeHeartbeat, NodeShape
from kubelet_dra.kubelet.permissions import check_access, node_permissions, registration_refused
from kubelet_dra.kubelet.pluginmanager import Diagnosis, HandshakeTimeouts, PluginManager, SocketState
from kubelet_dra.kubelet.pod_backoff import PodSyncPeriods
from kubelet_dra.kubelet.pod_workers import PodWorkers
from kubelet_dra.kubelet.release import DEFAULT_RELEASE, KubeletRelease
from kubelet_dra.peers.errors import UsageError
from kubelet_dra.peers.kube.access import Permission
from kubelet_dra.peers.kube.client import KubeApiError, KubeClient
from kubelet_dra.peers.log import get_logger

FIRST_REGISTRATIONS_GRACE = 2.0
"""How long the first pod sync waits for the sockets found at start to register (or fail once). The real kubelet
watches its registry dir as its runtime comes up and syncs pods only after its API informers have synced, so a
restarted kubelet has registered the drivers already running before it prepares anything; a driver that hangs in
its handshake does not hold the pods longer than this."""


class Clock(Protocol):
    """Wall-clock seconds and sleeping; tests pass a clock they advance by hand."""

    def time(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def time(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


@attrs.frozen
class NodeOptions:
    """How the simulated kubelet behaves; defaults are those of the release it emulates."""

    release: KubeletRelease = DEFAULT_RELEASE
    """The kubelet release whose DRA behaviour the node has (and reports in ``nodeInfo``)."""
    optional_node_operations: bool = False
    """The ``DRAOptionalNodeOperations`` feature gate (alpha in 1.37, off by default)."""

    wiping_delay: float = DEFAULT_WIPING_DELAY
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    kubelet_timing: bool = False
    """Reconcile every second like the kubelet instead of reacting to changes at once."""
    plugin_map: PluginMap = PluginMap.INSTANCES
    legacy_services: bool = False
    """Accept the ≤1.32 service identifiers and fall back to v1alpha4 (``1.0.0``)."""
    record_calls: str | None = None
    """Also append every call record to this JSON-lines file."""
    calls_kept: int | None = None
    """How many call records the node keeps in memory (``None``: all, as a scenario's expectations need)."""
    health: bool = True
    """Follow ``NodeWatchResources`` health streams (the ResourceHealthStatus gate, beta and on)."""
    health_restart_delay: float = DEFAULT_HEALTH_RESTART_DELAY
    handshake: HandshakeTimeouts = attrs.field(factory=HandshakeTimeouts)
    register_node: bool = True
    """Create the Node object in the API server when it does not exist, and keep its status and Lease current."""
    node_shape: NodeShape = attrs.field(factory=NodeShape)
    """The resources, labels and taints the Node reports."""
    heartbeat_period: float = HEARTBEAT_PERIOD
    dry_run_wipes: bool = False
    """Count the ResourceSlices each wipe would delete instead of deleting them (a real kubelet owns them)."""
    state_dir: str | None = None
    """Run the pods bound to the node, with the DRA manager's checkpoint (``dra_manager_state``) in this
    dir; ``None``: registration only. Needs an API server."""
    reconcile_period: float = DEFAULT_RECONCILE_PERIOD
    """How often the DRA manager unprepares claims of pods that are no longer active."""
    pod_sync: PodSyncPeriods = attrs.field(factory=PodSyncPeriods)
    """The pod workers' back-off after a failed sync, resync after a good one (``kubelet_dra.kubelet.pod_backoff``)."""
    metrics_port: int | None = None
    """Serve ``/metrics`` on this port (0: any free one, see ``Node.metrics_url``); ``None``: not served."""
    metrics_address: str = "127.0.0.1"

    def __attrs_post_init__(self) -> None:
        if self.optional_node_operations and not self.release.optional_node_operations:
            raise UsageError(
                f"kubelet {self.release.name} has no DRAOptionalNodeOperations feature gate",
                where="feature gates",
                fix="emulate kubelet 1.37 or later, or leave the gate off",
            )


class Node:
    def __init__(
        self,
        node_name: str,
        registry_dir: str,
        *,
        kubeconfig: str | None = None,
        kube: KubeClient | None = None,
        options: NodeOptions | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.name = node_name
        self.options = options = options or NodeOptions()
        self._clock = clock or SystemClock()
        self._log = get_logger("node", node=node_name)
        self._changed = asyncio.Event()
        self._own_kube = kube is None and kubeconfig is not None
        self.kube = kube if kube is not None else KubeClient.from_kubeconfig(kubeconfig) if kubeconfig else None
        self.recorder = CallRecorder(options.record_calls, keep=options.calls_kept)
        self.metrics = DRAMetrics(skip_counters=options.release.optional_node_operations)
        self._metrics_server = MetricsServer(self.metrics)
        self.health = (
            HealthCache(clock=self._clock.time, log=self._log, state_dir=options.state_dir) if options.health else None
        )
        self.heartbeat = (
            NodeHeartbeat(
                self.kube,
                node_name,
                options.node_shape,
                kubelet_version=options.release.version,
                clock=self._clock.time,
                sleep=self._clock.sleep,
                period=options.heartbeat_period,
                on_beat=self._notify,
            )
            if self.kube is not None and options.register_node
            else None
        )
        self._heartbeats: asyncio.Task[None] | None = None
        self.wiper = (
            ResourceSliceWiper(self.kube, node_name, sleep=self._clock.sleep, rng=rng, dry_run=options.dry_run_wipes)
            if self.kube
            else None
        )
        self.plugins = DRAPluginManager(
            PluginOptions(
                release=options.release,
                wiping_delay=options.wiping_delay,
                call_timeout=options.call_timeout,
                health_restart_delay=options.health_restart_delay,
                plugin_map=options.plugin_map,
                legacy_services=options.legacy_services,
            ),
            recorder=self.recorder,
            metrics=self.metrics,
            clock=self._clock.time,
            sleep=self._clock.sleep,
            wipe=self.wiper.wipe if self.wiper else None,
            health=self.health,
            on_change=self._notify,
            on_health_reported=self._devices_changed,
        )
        self.registration = PluginManager(
            registry_dir,
            {PLUGIN_TYPE: self.plugins},
            kubelet_timing=options.kubelet_timing,
            timeouts=options.handshake,
            clock=self._clock.time,
            sleep=self._clock.sleep,
            on_change=self._notify,
            recorder=self.recorder,
        )
        self.startup_wipe: asyncio.Task[WipeOutcome] | None = None
        self.manager: DRAManager | None = None
        self.pods: PodWorkers | None = None
        if options.state_dir is not None:
            self.manager = DRAManager(
                self,
                Checkpoint(options.state_dir),
                reconcile_period=options.reconcile_period,
                sleep=self._clock.sleep,
                release=options.release,
                optional_node_operations=options.optional_node_operations,
            )
            assert self.kube is not None  # the manager refuses a node without one
            self.pods = PodWorkers(
                self.kube,
                node_name,
                self.manager,
                health=self.health.devices if self.health else lambda _driver: [],
                periods=options.pod_sync,
                rng=rng,
                on_change=self._notify,
            )

    async def __aenter__(self) -> Node:
        self._log.info(
            "Starting simulated node",
            kubeletVersion=self.options.release.version,
            registryDir=self.registration.registry_dir,
            apiServer=self.kube.host if self.kube else "none (standalone, no ResourceSlice wiping)",
        )
        try:
            if self.kube is not None:
                await check_access(self.kube, self.name, self._permissions())
            if self.heartbeat is not None:
                try:
                    await self.heartbeat.register()
                except KubeApiError as err:
                    raise registration_refused(self.name, err, self.kube.host if self.kube else "") from err
                self._heartbeats = asyncio.create_task(self.heartbeat.run(), name="node heartbeats")
            if self.wiper is not None:
                self.startup_wipe = asyncio.create_task(self._startup_wipe(self.wiper), name="startup wipe")
            if self.options.metrics_port is not None:
                await self._metrics_server.start(self.options.metrics_address, self.options.metrics_port)
            await self.registration.start()
        except BaseException:
            await self._shutdown()
            raise
        if self.pods is not None:
            await self._first_registrations()
            self.pods.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.registration.stop()
        await self._shutdown()
        self._log.info("Stopped simulated node")

    # --- state for people and tools ---

    def registrations(self) -> list[SocketState]:
        """Every registration socket the node knows and where it stands."""
        return self.registration.sockets()

    def diagnoses(self) -> dict[str, Diagnosis]:
        """Socket path → why its last registration attempt failed (cleared by success or removal)."""
        return self.registration.diagnoses()

    def instances(self, driver_name: str | None = None) -> list[PluginInstance]:
        return self.plugins.instances(driver_name)

    def chosen_services(self) -> dict[tuple[str, str], str]:
        """(driver name, endpoint) → advertised identifier of the service negotiated for that instance."""
        return {(i.driver_name, i.endpoint): i.chosen_service for i in self.plugins.instances()}

    @property
    def metrics_url(self) -> str:
        """Where ``/metrics`` is served ("" when it is not)."""
        return self._metrics_server.url

    def metrics_text(self) -> str:
        """The kubelet's DRA metrics in the Prometheus text format, as ``GET /metrics`` returns them."""
        return self.metrics.text()

    def pending_wipes(self) -> dict[str, float]:
        """Driver → when its ResourceSlices will be wiped unless it becomes usable first."""
        return self.plugins.wipes.pending() if self.plugins.wipes else {}

    async def wait_for(self, predicate: Callable[[], object], timeout: float = 10.0) -> None:
        """Wait until ``predicate()`` is true; it is re-checked after every change of the node's state.

        Raises ``TimeoutError`` after ``timeout`` seconds of real time.
        """
        async with asyncio.timeout(timeout):
            while not predicate():
                await self._changed.wait()

    # --- internals ---

    def _permissions(self) -> list[Permission]:
        return node_permissions(
            self.name,
            registers=self.heartbeat is not None,
            runs_pods=self.pods is not None,
            dry_run_wipes=self.options.dry_run_wipes,
        )

    def _notify(self) -> None:
        """Wake every ``wait_for``: set the current event and start a fresh one for the next change."""
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def _devices_changed(self) -> None:
        """A driver reported a device's health changed: wake ``wait_for`` and let running pods re-report their
        status."""
        self._notify()
        if self.pods is not None:
            self.pods.refresh()

    async def _first_registrations(self) -> None:
        try:
            await self.wait_for(self.registration.first_attempts_done, FIRST_REGISTRATIONS_GRACE)
        except TimeoutError:
            self._log.info("Syncing pods while plugin registrations are still in progress")

    async def _startup_wipe(self, wiper: ResourceSliceWiper) -> WipeOutcome:
        outcome = await wiper.wipe()
        self._notify()
        return outcome

    async def _shutdown(self) -> None:
        if self._heartbeats is not None:
            self._heartbeats.cancel()
            await asyncio.wait([self._heartbeats])
        if self.pods is not None:
            await self.pods.stop()
        if self.startup_wipe is not None:
            self.startup_wipe.cancel()
            await asyncio.wait([self.startup_wipe])
        await self.plugins.close()
        await self._metrics_server.stop()
        if self._own_kube and self.kube is not None:
            self.kube.close()
