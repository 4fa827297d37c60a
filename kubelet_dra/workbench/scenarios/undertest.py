"""The driver under test: a scenario's driver played by any real driver, and what one run of it tells about it.

``replay --driver ID=COMMAND`` runs the file's driver ``ID`` from the user's command. The file was written
for the reference driver (its name, its device names, its CDI names); before any file replays, the driver
under test runs once on a node of its own (``probe``) and says what a file needs to know of it: its name
(from its registration, unless ``--driver-name`` gave it), the devices and slices it publishes for its
node, and whether it serves a health service. ``carryover`` then rewrites each file for it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import attrs
import grpc

from kubelet_dra.peers.api.services import HEALTH_SERVICES
from kubelet_dra.peers.errors import DriverStartError, StateError
from kubelet_dra.peers.log import get_logger
from kubelet_dra.workbench.testbed import DriverSpec, Testbed, TestbedOptions, objects
from kubelet_dra.workbench.testbed.claimshapes import ClaimShapes

PROBE_TIMEOUT = 60.0
"""How long the driver under test may take from its start to registered with its devices published."""
SETTLE = 1.0
"""After the first ResourceSlice, how long the probe waits for the rest of the driver's slices."""
HEALTH_PROBE_TIMEOUT = 1.0
PROBE_NODE = "node-1"
REAL_DRIVER_WAIT = 60.0
"""The longest an expectation on the driver's own timing waits for a real driver by default (the kubeletplugin
helper re-creates a deleted ResourceSlice up to a minute after it created it)."""


@attrs.frozen
class UnderTest:
    """What the user said of the driver under test: which file driver it plays, its command, what it accepts."""

    driver_id: str
    command: str
    name: str | None = None
    """``--driver-name``; ``None``: learnt from its registration."""
    device_class: Mapping[str, Any] | str | None = None
    """``--device-class``: a DeviceClass manifest, the name of one in the cluster, or ``None`` (the file's class,
    selecting the driver's devices)."""
    claims: ClaimShapes = attrs.field(factory=ClaimShapes)
    """``--claim``: the claims it accepts; none given: the file's own requests."""
    wait: float = REAL_DRIVER_WAIT
    """``--driver-wait``: the longest an expectation on its own timing waits past the file's deadline."""

    @property
    def class_name(self) -> str | None:
        """The DeviceClass a ``--device-class`` names, ``None`` without one."""
        if isinstance(self.device_class, str):
            return self.device_class
        return None if self.device_class is None else str(self.device_class["metadata"]["name"])


@attrs.frozen
class DriverFacts:
    """What the driver under test showed on a node of its own."""

    name: str
    node: str
    devices: tuple[tuple[str, str], ...]
    """(pool, device) of every device it published for its node, in slice order."""
    shareable: tuple[tuple[str, str], ...]
    """Those of ``devices`` that allow multiple allocations (shares of their capacity, each with a share ID)."""
    slices: int
    """How many ResourceSlices it published for its node."""
    health: str
    """Its device health: ``reports`` (its health stream sends devices' health at once), ``silent`` (the stream
    stays open and names no device within ``HEALTH_PROBE_TIMEOUT``) or ``none`` (UNIMPLEMENTED)."""
    info: Mapping[str, Any] = attrs.field(factory=dict)
    """Its GetInfo answer (JSON, the ``.proto`` field names): the services it advertises."""

    def pool_on(self, node: str, pool: str) -> str:
        """The pool name the driver would use on ``node``: pools named after the probe's node follow the node."""
        return node if pool == self.node else pool


async def probe(under_test: UnderTest) -> DriverFacts:
    """Run the driver once on a node of its own and read what the files need to know of it."""
    log = get_logger("replay", driver=under_test.driver_id)
    options = TestbedOptions(node_name=PROBE_NODE, control_plane=False)
    async with Testbed(options) as bed:
        spec = DriverSpec(under_test.name, command=under_test.command, label=under_test.driver_id)
        process = await bed.add_driver(spec, wait=None)

        def registered() -> str | None:
            if not process.running:
                raise DriverStartError(
                    f"the driver {under_test.driver_id} exited (code {process.returncode}) before it registered",
                    fix="check its command (its last lines below)",
                    details=process.log_tail(),
                )
            names = [i.driver_name for i in bed.node.instances() if i.connected]
            return next((name for name in names if under_test.name in (None, name)), None)

        try:
            name = await bed.until(registered, timeout=PROBE_TIMEOUT, what="the driver under test registered")
            published = await bed.until(
                lambda: _slices(bed, name), timeout=PROBE_TIMEOUT, what=f"{name} published its ResourceSlices"
            )
        except StateError as err:
            fix = "check its command (its last lines below)"
            raise DriverStartError(str(err), fix=fix, details=process.log_tail()) from err
        published = await _settled(bed, name, published)
        instance = next(i for i in bed.node.instances(name) if i.connected)
        health = await _health(instance.endpoint)
        answers = [call.response for call in bed.calls(method="GetInfo") if call.status == "OK" and call.response]
    info = next((answer for answer in reversed(answers) if answer.get("name") == name), {})
    listed = [
        (item["spec"]["pool"]["name"], device) for item in published for device in item["spec"].get("devices") or []
    ]
    facts = DriverFacts(
        name=name,
        node=PROBE_NODE,
        devices=tuple((pool, device["name"]) for pool, device in listed),
        shareable=tuple((pool, device["name"]) for pool, device in listed if device.get("allowMultipleAllocations")),
        slices=len(published),
        health=health,
        info=info,
    )
    log.v(1).info("Driver under test", name=name, devices=len(facts.devices), slices=facts.slices, health=health)
    return facts


async def _slices(bed: Testbed, driver: str) -> list[dict[str, Any]]:
    selector = f"spec.nodeName={bed.options.node_name},spec.driver={driver}"
    return await objects.list_objects(bed.kube, "ResourceSlice", field_selector=selector)


async def _settled(bed: Testbed, driver: str, published: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The driver's slices once it published no further one for ``SETTLE`` seconds (a pool comes at once)."""
    while True:
        await asyncio.sleep(SETTLE)
        now = await _slices(bed, driver)
        if len(now) <= len(published):
            return now
        published = now


async def _health(endpoint: str) -> str:
    """How the driver's endpoint serves device health (``DriverFacts.health``), from a stream of each health
    service opened for ``HEALTH_PROBE_TIMEOUT``: a direct call to the driver, which the node under test never sees."""
    found = "none"
    async with grpc.aio.insecure_channel(f"unix:{endpoint}") as channel:
        for service in HEALTH_SERVICES.values():
            request = service.message_class("NodeWatchResourcesRequest")()
            call = channel.unary_stream(
                service.method_path("NodeWatchResources"),
                request_serializer=type(request).SerializeToString,
                response_deserializer=service.message_class("NodeWatchResourcesResponse").FromString,
            )(request, timeout=HEALTH_PROBE_TIMEOUT)
            try:
                async for message in call:
                    if message.devices:
                        return "reports"
            except grpc.aio.AioRpcError as err:
                if err.code() is not grpc.StatusCode.UNIMPLEMENTED:
                    found = "silent"
    return found
