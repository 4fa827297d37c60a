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
import contextlib
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType

import attrs

from kubelet_dra.kubelet.kubelet import Node, NodeOptions
from kubelet_dra.kubelet.metrics.metrics import ANY_DRIVER
from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.peers.log import get_logger
from kubelet_dra.workbench.testbed import REFERENCE_DRIVER, DriverProcess, DriverSpec, placeholder_values

REGISTRY = "plugins_registry"
PLUGINS = "plugins"
CDI = "cdi"
NODE_PLACEHOLDER = "{node}"
NODES_PER_DRIVER_PROCESS = 500
REQUEST_THREADS = 64
"""Threads the nodes' API requests go out from (the loop's default: 6 on 2 cores). A request's thread mostly
waits for the server; with a thousand nodes' pods starting or stopping at once, six in flight made them queue
for minutes while the server had room."""
"""Nodes one reference driver process serves: a thousand nodes take two processes, one per core."""


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
        self.drivers: dict[str, DriverProcess] = {}
        """Node name → its driver process."""
        self._kube: KubeClient | None = None
        self._stack = contextlib.AsyncExitStack()
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
            self._kube = KubeClient.from_kubeconfig(self.kubeconfig)
        # Nodes first: a driver publishes ResourceSlices owned by its Node, which must exist by then.
        for layout in self.layouts:
            layout.root.mkdir(parents=True, exist_ok=True)  # the registry dir is the plugin watcher's to make
            options = attrs.evolve(self.options, state_dir=str(layout.root))
            own = None if self._kube else self.node_kubeconfig(layout)
            node = Node(layout.name, str(layout.registry_dir), kube=self._kube, kubeconfig=own, options=options)
            self.nodes.append(await self._stack.enter_async_context(node))
        self._log.info("Nodes started", nodes=len(self.nodes))
        if self.driver is not None:
            groups = self._shared_driver_groups(self.driver)
            for group in groups or [[layout] for layout in self.layouts]:
                process = self._driver_process(group, self.driver)
                for layout in group:
                    self.drivers[layout.name] = process
                await process.start()
            self._log.info("Driver processes started", nodes=len(self.drivers), processes=len(self._processes()))

    def _shared_driver_groups(self, spec: DriverSpec) -> list[list[NodeLayout]]:
        """The nodes in groups of one reference driver process each; none when each node needs its own."""
        if spec.command != REFERENCE_DRIVER or not spec.name or len(self.layouts) < 2:
            return []
        root = self.layouts[0].root.parent
        if any(layout != NodeLayout.under(root, layout.name) for layout in self.layouts):
            return []  # not one root dir: the per-node paths cannot be one {node} pattern
        size = NODES_PER_DRIVER_PROCESS
        return [self.layouts[start : start + size] for start in range(0, len(self.layouts), size)]

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
        await self._stack.aclose()
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
