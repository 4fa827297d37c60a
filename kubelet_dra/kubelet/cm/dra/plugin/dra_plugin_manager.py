"""The DRA plugin manager: the registration handler for ``DRAPlugin`` and the store of driver instances.

v1.36 semantics by default (docs/protocol.md#dra-plugin-manager): instances per driver name keyed by endpoint, a
duplicate endpoint rejected, calls going to the newest connected instance, ResourceSlices wiped
once a driver has had no connected instance for the wiping delay. ``PluginOptions`` (``plugin/options.py``) holds
the settings, among them the ≤1.32 variants this tool can also emulate.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence

import grpc

from kubelet_dra.kubelet.cm.dra.healthinfo import HealthCache
from kubelet_dra.kubelet.cm.dra.plugin.client import DRAClient
from kubelet_dra.kubelet.cm.dra.plugin.dra_plugin import PluginInstance
from kubelet_dra.kubelet.cm.dra.plugin.options import PluginMap, PluginOptions
from kubelet_dra.kubelet.cm.dra.plugin.wipes import WipeScheduler
from kubelet_dra.kubelet.metrics.metrics import DRAMetrics
from kubelet_dra.peers.api.calls import CallRecorder
from kubelet_dra.peers.api.services import DRA_HEALTH_V1ALPHA1, HealthResponse, Service, negotiate, pick_health_service
from kubelet_dra.peers.errors import DriverError, DriverNotRegistered, KubeletError
from kubelet_dra.peers.gotext import go_quote
from kubelet_dra.peers.log import Logger, get_logger

PLUGIN_TYPE = "DRAPlugin"


class PluginRejected(KubeletError):
    """The handler refuses a plugin; the text is the kubelet's."""


def _ignore() -> None:
    return None


_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})(.{0,2})")


def target_error(target: str) -> str:
    """Why Go's URL parser rejects a gRPC target, or "" when it accepts it."""
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in target):
        return f"parse {go_quote(target)}: net/url: invalid control character in URL"
    bad = _BAD_ESCAPE.search(target)
    if bad:
        return f"parse {go_quote(target)}: invalid URL escape {go_quote(bad.group(0))}"
    return ""


class DRAPluginManager:
    """The kubelet's ``DRAPluginManager`` (``pkg/kubelet/cm/dra/plugin/dra_plugin_manager.go``): the handler the
    plugin manager hands ``DRAPlugin`` sockets to, and the store the DRA manager finds a driver's instance in.

    It owns each instance's gRPC connection and health stream, and arms the wipe of a driver's ResourceSlices
    when it has no connected instance left. The node supplies its parts: the ``recorder`` every call is noted in
    (the node's call record, which never changes a call), its metrics, clock and sleep, the ``wipe`` (``None``:
    none, without an API server) and the ``health`` cache (``None``: the ResourceHealthStatus gate is off).
    """

    def __init__(
        self,
        options: PluginOptions,
        *,
        recorder: CallRecorder,
        metrics: DRAMetrics,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]],
        wipe: Callable[[str], Awaitable[object]] | None = None,
        health: HealthCache | None = None,
        log: Logger | None = None,
        on_change: Callable[[], None] = _ignore,
        on_health_reported: Callable[[], None] = _ignore,
    ) -> None:
        """``on_change``: a plugin, its connection or its health stream changed; ``on_health_reported``: a driver
        reported a device's health changed, which the kubelet pushes to the pods using it. Nothing else is pushed:
        a driver that goes (its devices forgotten with its stream) shows in a pod's status at the pod's next sync
        (kubelet 1.36.2: 80 s after the driver stopped)."""
        self.options = options
        self.recorder = recorder
        self.metrics = metrics
        self.health = health
        self._clock = clock
        self._sleep = sleep
        self._log = log or get_logger("dra-plugins")
        self._on_change = on_change
        self._on_health_reported = on_health_reported
        self._store: dict[str, list[PluginInstance]] = {}
        delay = options.wiping_delay
        self.wipes = (
            WipeScheduler(wipe, delay=delay, clock=clock, sleep=sleep, log=self._log, on_change=on_change)
            if wipe is not None
            else None
        )

    # --- the registration handler (called by the plugin manager) ---

    def validate_plugin(self, name: str, endpoint: str, versions: Sequence[str]) -> None:
        self._negotiate(name, endpoint, versions, validating=True)

    async def register_plugin(self, name: str, endpoint: str, versions: Sequence[str]) -> None:
        service = self._negotiate(name, endpoint, versions, validating=False)
        health = self._health_service(versions)
        replacing = self.options.plugin_map is PluginMap.REPLACE
        replaced = self._store.get(name, []) if replacing else []
        if not replacing and any(instance.endpoint == endpoint for instance in self._store.get(name, [])):
            raise PluginRejected(f"endpoint {endpoint} already registered for DRA driver plugin {name}")
        instance = self._connect(name, endpoint, service, health)
        instances = [instance] if replacing else [*self._store.get(name, []), instance]
        self._store[name] = instances
        for old in replaced:
            self._log.info(
                "DRA plugin already registered, the old plugin was replaced and will be forgotten by the kubelet"
                " till the next kubelet restart",
                driverName=name,
                oldEndpoint=old.endpoint,
            )
            await old.close()
        self._log.info(
            "Registered DRA plugin",
            driverName=name,
            endpoint=endpoint,
            chosenService=instance.chosen_service,
            chosenHealthService=instance.chosen_health_service,
            numPlugins=len(instances),
        )
        self._sync(name)

    async def deregister_plugin(self, name: str, endpoint: str) -> None:
        instances = self._store.get(name, [])
        # ≤1.32 deregistered by name alone: whatever instance holds the name goes, even a newer one.
        match = [i for i in instances if self.options.plugin_map is PluginMap.REPLACE or i.endpoint == endpoint]
        if not match:
            return
        instance = match[0]
        instances.remove(instance)
        if not instances:
            del self._store[name]
        self._log.info(
            "Unregistered DRA plugin", driverName=name, endpoint=instance.endpoint, numPlugins=len(instances)
        )
        await instance.close()
        self._sync(name)

    # --- use by the node ---

    def get_plugin(self, driver_name: str) -> PluginInstance:
        """The instance to call: the newest connected one, else the newest (``DRAPluginManager.get`` in Go)."""
        if not driver_name:
            raise DriverNotRegistered("DRA driver name is empty")
        instances = self._store.get(driver_name)
        if not instances:
            raise DriverNotRegistered(f"DRA driver {driver_name} is not registered")
        return next((i for i in reversed(instances) if i.connected), instances[-1])

    def instances(self, driver_name: str | None = None) -> list[PluginInstance]:
        """Registered instances in registration order, of one driver or of all."""
        if driver_name is not None:
            return list(self._store.get(driver_name, []))
        return [instance for instances in self._store.values() for instance in instances]

    def usable(self, driver_name: str) -> bool:
        return any(instance.connected for instance in self._store.get(driver_name, []))

    async def close(self) -> None:
        if self.wipes is not None:
            await self.wipes.close()
        for instance in self.instances():
            await instance.close()
        self._store.clear()

    # --- internals ---

    def _negotiate(self, name: str, endpoint: str, versions: Sequence[str], *, validating: bool) -> Service:
        try:
            return negotiate(versions, legacy=self.options.legacy_services)
        except DriverError as err:
            if not self.options.legacy_services:
                prefix = f"invalid supported gRPC versions of DRA driver plugin {name} at endpoint {endpoint}"
            elif validating:
                prefix = f"invalid versions of plugin {name}"
            else:
                prefix = f"version check of plugin {name} failed"
            raise PluginRejected(f"{prefix}: {err.what}") from err

    def _health_service(self, versions: Sequence[str]) -> Service | None:
        """The health service to stream from: 1.37 negotiates one from what the plugin advertised; 1.36 streams
        v1alpha1 from every instance, advertised or not. ``None`` without the ResourceHealthStatus gate."""
        if self.health is None:
            return None
        if not self.options.release.negotiates_health:
            return DRA_HEALTH_V1ALPHA1
        return pick_health_service(versions, self.options.release.health_services)

    def _connect(self, name: str, endpoint: str, service: Service, health: Service | None) -> PluginInstance:
        target = f"unix:{endpoint}"
        problem = target_error(target)
        if problem:
            raise PluginRejected(
                f"create gRPC connection to DRA driver {name} plugin at endpoint {endpoint}: {problem}"
            )
        self._log.v(4).info("Creating new gRPC connection", target=target)
        channel = grpc.aio.insecure_channel(target)
        log = self._log.with_values(driverName=name, endpoint=endpoint)
        client = DRAClient(
            driver=name,
            endpoint=endpoint,
            channel=channel,
            service=service,
            recorder=self.recorder,
            metrics=self.metrics,
            log=log,
            call_timeout=self.options.call_timeout,
        )
        instance = PluginInstance(name, endpoint, service, self._clock(), channel, client, health_service=health)
        if health is not None:
            instance.run(self._follow_health(instance, health, log), "health stream")
        instance.start(self._connection_changed)
        return instance

    def _connection_changed(self, instance: PluginInstance) -> None:
        self._log.v(2).info(
            "Connection changed",
            driverName=instance.driver_name,
            endpoint=instance.endpoint,
            connected=instance.connected,
        )
        self._sync(instance.driver_name)

    def _sync(self, driver_name: str) -> None:
        """Re-evaluate the driver after any change: usable cancels its wipe timer, unusable arms one."""
        if self.wipes is not None:
            if self.usable(driver_name):
                self.wipes.cancel(driver_name)
            else:
                self.wipes.arm(driver_name)
        self._on_change()

    async def _follow_health(self, instance: PluginInstance, service: Service, log: Logger) -> None:
        """Keep a health stream open; reopen it a fixed delay after each end, until deregistration, or (1.37)
        until the driver answers UNIMPLEMENTED: it does not serve health, and asking again will not change that."""
        assert self.health is not None
        health = self.health
        while True:
            log.v(4).info("Attempting to start WatchResources health stream", service=service.advertised)
            try:
                await instance.client.node_watch_resources(
                    service, lambda response: self._health_report(instance, response)
                )
                log.v(2).info("WatchResources health stream has ended", error="")
            except grpc.aio.AioRpcError as err:
                if err.code() is grpc.StatusCode.UNIMPLEMENTED and self.options.release.stop_health_on_unimplemented:
                    log.v(2).info("Driver does not support WatchResources health stream, stopping")
                    return
                log.error("Error receiving from WatchResources stream", f"{err.code().name}: {err.details()}")
            finally:
                health.clear(instance.driver_name)
                self._on_change()
            await self._sleep(self.options.health_restart_delay)

    def _health_report(self, instance: PluginInstance, response: HealthResponse) -> None:
        assert self.health is not None
        if self.health.update(instance.driver_name, response):
            self._on_health_reported()
