"""``Fleet``: many simulated nodes in one process, each with its own dirs and its own driver.

Scale testers want a thousand DRA nodes, not a thousand kubelet-dra processes: one process per node
costs about 94 MB, while a ``Node`` in a shared process costs a few MB. The nodes share one event
loop and one API client; everything a kubelet keeps per node stays per node (registry dir, plugins
dir, CDI dir, checkpoint, Node object, Lease, pod workers). A driver command (``--driver-cmd``)
runs once per node, its placeholders filled in for that node, as a DaemonSet gives every node its
pod; the bundled reference driver serves up to ``NODES_PER_DRIVER_PROCESS`` nodes from one process
(``kubelet-dra driver --nodes``), each node still with its own sockets, slices, CDI dir and knobs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType

import attrs

from kubelet_dra.kubelet.kubelet import Node, NodeOptions
from kubelet_dra.kubelet.metrics.metrics import ANY_DRIVER
from kubelet_dra.kubelet.nodestatus.heartbeat import HEARTBEAT_THREAD_COUNT
from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.peers.log import get_logger
from kubelet_dra.workbench.testbed import REFERENCE_DRIVER, DriverProcess, DriverSpec, placeholder_values

REGISTRY = "plugins_registry"
PLUGINS = "plugins"
CDI = "cdi"
NODE_PLACEHOLDER = "{node}"
NODES_PER_DRIVER_PROCESS = 500
"""Nodes one reference driver process serves: a thousand nodes take two processes, one per core."""
REQUEST_THREADS = 64
"""Threads the nodes' API requests go out from (the loop's default: 6 on 2 cores). A request's thread mostly
waits for the server; with a thousand nodes' pods starting or stopping at once, six in flight made them queue
for minutes while the server had room."""
NODE_STARTS_AT_ONCE = 32
"""Nodes starting at the same time. A node's start is a few requests in turn (who am I, its Node, the wipe of its
slices, its pods' list): one node after the other, a thousand took minutes of waiting on answers."""
WIPES_WAIT = 10.0
"""Seconds a group's driver process waits for its nodes' start-up wipes: a slice published before its node's wipe
is deleted by it and republished only after the driver's republish delay (30 s)."""


@attrs.frozen
class NodeLayout:
    """Where one node keeps its things, as a kubelet does under its root dir (``/var/lib/kubelet``)."""

    name: str
    root: Path
    """The node's root dir: its checkpoint, health state and driver log live here."""
    registry_dir: Path

    @classmethod
    def under(cls, root_dir: Path, name: str) -> NodeLayout:
        """The layout of node ``name`` in its own dir below ``root_dir``."""
        root = root_dir.absolute() / name
        return cls(name, root, root / REGISTRY)

    @property
    def plugins_root(self) -> Path:
        return self.root / PLUGINS

    @property
    def cdi_root(self) -> Path:
        return self.root / CDI


@attrs.frozen
class NodeRow:
    """One node at a glance, for the live table and the JSON status."""

    name: str
    drivers: tuple[str, ...]
    """Drivers with a connected instance."""
    pods: int
    """Pods whose claims are prepared and that run."""
    claims: int
    """Prepared claims in the DRA manager's cache."""
    driver_process: str
    """``running``, ``exited N`` or "" when the fleet starts no driver."""
    last_error: str


class Fleet:
    """``async with Fleet(layouts, kubeconfig=…, options=…, driver=spec) as fleet:`` then ``fleet.rows()``."""

    def __init__(
        self,
        layouts: Sequence[NodeLayout],
        *,
        kubeconfig: str,
        options: NodeOptions,
        driver: DriverSpec | None = None,
    ) -> None:
        self.layouts = list(layouts)
        self.kubeconfig = kubeconfig
        self.options = options
        self.driver = driver
        self.nodes: list[Node] = []
        """The started nodes, in the order of ``layouts``."""
        self._running: list[Node] = []
        """Every node started so far, in the order their starts ended: the ones to stop."""
        self.drivers: dict[str, DriverProcess] = {}
        """Node name → its driver process."""
        self._kube: KubeClient | None = None
        self._log = get_logger("fleet")

    async def __aenter__(self) -> Fleet:
        try:
            await self._start()
        except BaseException:
            await self._stop()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._stop()

    @property
    def per_node_identity(self) -> bool:
        """``--kubeconfig 'kubeconfig-node-{node}'``: each node has its own credentials (``system:node:<name>``)."""
        return NODE_PLACEHOLDER in self.kubeconfig

    def node_kubeconfig(self, layout: NodeLayout) -> str:
        return self.kubeconfig.replace(NODE_PLACEHOLDER, layout.name)

    async def _start(self) -> None:
        if len(self.layouts) > 1:
            threads = min(REQUEST_THREADS, 4 * len(self.layouts))
            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(threads, "kube-request"))
        if not self.per_node_identity:  # one client for all: a client per node would cost memory for nothing
            # As many kept connections as threads send on it: with the library's ten, a thousand nodes' requests
            # opened (and TLS-handshook) a connection each, on the API server's loop too.
            self._kube = KubeClient.from_kubeconfig(
                self.kubeconfig, connections=REQUEST_THREADS + HEARTBEAT_THREAD_COUNT
            )
        shared = self.driver is not None and self._shares_driver_processes(self.driver)
        # A group of nodes at a time, then its driver: a driver publishes ResourceSlices owned by its Node, which
        # must exist by then, and the next group's nodes start while this group's driver process comes up.
        for first in range(0, len(self.layouts), NODES_PER_DRIVER_PROCESS):
            group = self.layouts[first : first + NODES_PER_DRIVER_PROCESS]
            nodes = await self._start_nodes(group)
            self._log.info("Nodes started", nodes=len(self.nodes))
            if self.driver is None:
                continue
            wipes = [node.startup_wipe for node in nodes if node.startup_wipe is not None]
            if wipes:
                await asyncio.wait(wipes, timeout=WIPES_WAIT)
            for drivers in [group] if shared else [[layout] for layout in group]:
                process = self._driver_process(drivers, self.driver)
                for layout in drivers:
                    self.drivers[layout.name] = process
                await process.start()
        if self.driver is not None:
            self._log.info("Driver processes started", nodes=len(self.drivers), processes=len(self._processes()))

    async def _start_nodes(self, layouts: list[NodeLayout]) -> list[Node]:
        """Start the nodes of ``layouts``, ``NODE_STARTS_AT_ONCE`` at a time; each started one is stopped with the
        fleet (a start cancelled half-way included), and the first failure is raised once every start has ended."""
        slots = asyncio.Semaphore(NODE_STARTS_AT_ONCE)

        async def start(layout: NodeLayout) -> Node:
            layout.root.mkdir(parents=True, exist_ok=True)  # the registry dir is the plugin watcher's to make
            options = attrs.evolve(self.options, state_dir=str(layout.root))
            own = None if self._kube else self.node_kubeconfig(layout)
            node = Node(layout.name, str(layout.registry_dir), kube=self._kube, kubeconfig=own, options=options)
            async with slots:
                self._running.append(await node.__aenter__())
            return node

        outcomes = await asyncio.gather(*(start(layout) for layout in layouts), return_exceptions=True)
        started = [outcome for outcome in outcomes if isinstance(outcome, Node)]
        self.nodes += started
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return started

    def _shares_driver_processes(self, spec: DriverSpec) -> bool:
        """Whether the nodes' reference drivers run in processes of ``NODES_PER_DRIVER_PROCESS`` nodes each (else
        a process per node): the bundled reference driver, and every node under one root dir, so that each
        per-node path is one ``{node}`` pattern."""
        if spec.command != REFERENCE_DRIVER or not spec.name or len(self.layouts) < 2:
            return False
        root = self.layouts[0].root.parent
        return all(layout == NodeLayout.under(root, layout.name) for layout in self.layouts)

    def _processes(self) -> list[DriverProcess]:
        return list({id(process): process for process in self.drivers.values()}.values())

    def _driver_process(self, group: list[NodeLayout], spec: DriverSpec) -> DriverProcess:
        """The driver process of one node, or of a group: then ``--nodes`` and every path a ``{node}`` pattern."""
        for layout in group:
            layout.cdi_root.mkdir(parents=True, exist_ok=True)
            if (
                spec.name
            ):  # a kubelet host has the driver's dir under the plugins root (Kubernetes' test driver needs it)
                (layout.plugins_root / spec.name).mkdir(parents=True, exist_ok=True)
        first = group[0]
        shape = NodeLayout.under(first.root.parent, NODE_PLACEHOLDER) if len(group) > 1 else first
        plugin_dir = shape.plugins_root / spec.key
        values = placeholder_values(
            node=shape.name,
            kubeconfig=Path(self.kubeconfig.replace(NODE_PLACEHOLDER, shape.name)).absolute(),
            registry_dir=shape.registry_dir,
            plugin_dir=plugin_dir,
            plugins_root=shape.plugins_root,
            cdi_root=shape.cdi_root,
            driver=spec.name or "",
        )
        if len(group) == 1:
            return DriverProcess(spec, values, plugin_dir, first.root / f"{spec.key}.log")
        names = ",".join(layout.name for layout in group)
        shared = attrs.evolve(spec, command=spec.command.replace("--node-name {node}", f"--nodes {names}"))
        log = first.root.parent / f"{spec.key}-{first.name}-{group[-1].name}.log"
        return DriverProcess(shared, values, first.root.parent, log)

    async def _stop(self) -> None:
        stops = [process.stop() for process in self._processes()]
        for outcome in await asyncio.gather(*stops, return_exceptions=True):
            if isinstance(outcome, BaseException):
                self._log.error("Failed to stop a driver process", outcome)
        # All at once: each node's stop is mostly waiting (its tasks cancelled, its channels and clients closed).
        stopping, self._running = self._running, []
        for outcome in await asyncio.gather(
            *(node.__aexit__(None, None, None) for node in stopping), return_exceptions=True
        ):
            if isinstance(outcome, BaseException):
                self._log.error("Failed to stop a node", outcome)
        if self._kube is not None:
            self._kube.close()
            self._kube = None

    # --- state for people and tools ---

    def rows(self) -> list[NodeRow]:
        return [self._row(layout, node) for layout, node in zip(self.layouts, self.nodes, strict=False)]

    def _row(self, layout: NodeLayout, node: Node) -> NodeRow:
        drivers = sorted({instance.driver_name for instance in node.instances() if instance.connected})
        process = self.drivers.get(layout.name)
        state = "" if process is None else "running" if process.running else f"exited {process.returncode}"
        return NodeRow(
            name=layout.name,
            drivers=tuple(drivers),
            pods=len(node.pods.started) if node.pods else 0,
            claims=node.manager.cache.claims_in_use()[ANY_DRIVER] if node.manager else 0,
            driver_process=state,
            last_error=self._last_error(node, process),
        )

    @staticmethod
    def _last_error(node: Node, process: DriverProcess | None) -> str:
        """The most pressing problem: a dead driver, then a failed registration, then a failed pod sync."""
        if process is not None and not process.running and process.starts:
            tail = process.log_tail(1)
            return f"driver exited with code {process.returncode}" + (f": {tail}" if tail else "")
        if diagnoses := node.diagnoses():
            diagnosis = list(diagnoses.values())[-1]
            return f"{diagnosis.id} {diagnosis.cause}"
        return node.pods.last_error if node.pods else ""
