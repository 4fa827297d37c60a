"""``Testbed``: one simulated node with its API server, control plane and driver processes, for the suites.

The scenario runner, the conformance suite and the demo all need the same stage: a short work dir
(Unix socket paths are limited to 107 bytes), an API server (the embedded one, restartable on the
same port with its objects kept, or a real cluster by kubeconfig), the offline control plane that
allocates claims, a ``Node`` that can be restarted on the same registry and state dirs, and drivers
started from command templates. The testbed owns them all and cleans every one up, even when the
work inside it fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, TypeVar

import attrs

from kubelet_dra.kubelet.cm.dra.plugin import CallRecord, PluginInstance
from kubelet_dra.kubelet.kubelet import Node, NodeOptions
from kubelet_dra.kubelet.pluginmanager import SocketPhase
from kubelet_dra.peers.apiserver.server import EmbeddedAPIServer
from kubelet_dra.peers.controlplane import ControlPlane
from kubelet_dra.peers.errors import StateError, UsageError
from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.peers.log import get_logger
from kubelet_dra.workbench.testbed.drivers import DriverProcess, DriverSpec, placeholder_values
from kubelet_dra.workbench.testbed.proxied import ProxyFactory, ProxySite
from kubelet_dra.workbench.testbed.statedir import StateDirClaim

T = TypeVar("T")
POLL_INTERVAL = 0.05


@attrs.frozen
class TestbedOptions:
    """What to stage. Paths left ``None`` are made in the work dir."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    node_name: str = "node-1"
    node: NodeOptions = attrs.field(factory=NodeOptions)
    """The simulated kubelet's options; ``state_dir`` is filled in when ``None``."""
    kubeconfig: str | None = None
    """A real cluster instead of the embedded API server."""
    registry_dir: str | None = None
    """Watch this registry dir (drivers already running) instead of one in the work dir."""
    cdi_root: str | None = None
    control_plane: bool = True
    """Allocate claims and generate them from templates, as a cluster's control plane would."""
    node_restricted: bool = False
    """Embedded API server only: node identities may write only their own node's ResourceSlices."""
    keep: bool = False
    """Keep the work dir afterwards (it is kept anyway when the work inside the testbed failed)."""


class Testbed:
    """``async with Testbed(options) as bed:`` then ``await bed.add_driver(spec)``, ``bed.node``, ``bed.kube``."""

    __test__ = False  # not a pytest test class

    def __init__(
        self, options: TestbedOptions | None = None, *, workdir: Path | None = None, proxies: ProxyFactory | None = None
    ) -> None:
        """``proxies``: makes the fault proxy of each ``proxied`` driver (``kubelet_dra.workbench.tap.FaultProxy``)."""
        self.options = options = options or TestbedOptions()
        given = {"registry dir": options.registry_dir, "CDI root": options.cdi_root}
        for what, path in given.items():
            if path is not None and not Path(path).is_dir():
                raise UsageError(f"the {what} {path} is not a directory", fix="give the directory the driver uses")
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="kd-", dir="/tmp"))
        self.registry_dir = Path(options.registry_dir or self.workdir / "registry")
        self.cdi_root = Path(options.cdi_root or self.workdir / "cdi")
        self.plugins_root = self.workdir / "plugins"
        """The kubelet's plugins dir: each driver's own dir is below it."""
        self.state_dir = Path(options.node.state_dir or self.workdir / "state")
        self._state_claim = StateDirClaim(self.state_dir, where="state dir")
        self.kubeconfig = Path(options.kubeconfig) if options.kubeconfig else self.workdir / "kubeconfig"
        self.drivers: list[DriverProcess] = []
        self.past_calls: list[CallRecord] = []
        """Calls recorded by earlier incarnations of the node (before restarts)."""
        self._log = get_logger("testbed", node=options.node_name)
        self._stack = contextlib.AsyncExitStack()
        self._apiserver: EmbeddedAPIServer | None = None
        self._listen = "127.0.0.1:0"
        self._kube: KubeClient | None = None
        self._node: Node | None = None
        self._control_plane: ControlPlane | None = None
        self._proxies = proxies

    # --- lifecycle ---

    async def __aenter__(self) -> Testbed:
        for directory in (self.registry_dir, self.cdi_root, self.state_dir):
            directory.mkdir(parents=True, exist_ok=True)
        try:
            if self.options.kubeconfig is None:
                await self.start_apiserver()
            self._kube = KubeClient.from_kubeconfig(str(self.kubeconfig))
            if self.options.control_plane:
                self._control_plane = ControlPlane(self._kube)
                await self._control_plane.__aenter__()
            await self.start_node()
        except BaseException:
            await self._close(failed=True)
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        # a usage error (a bad flag, a bad template) leaves nothing worth reading behind
        await self._close(failed=exc is not None and not isinstance(exc, UsageError))

    async def _close(self, *, failed: bool) -> None:
        for driver in reversed(self.drivers):
            with contextlib.suppress(Exception):
                await driver.close()
        await self.stop_node()
        if self._control_plane is not None:
            await self._control_plane.__aexit__(None, None, None)
            self._control_plane = None
        if self._kube is not None:
            self._kube.close()
            self._kube = None
        await self.stop_apiserver()
        if self._own_workdir and not (self.options.keep or failed):
            shutil.rmtree(self.workdir, ignore_errors=True)

    # --- the API server ---

    @property
    def embedded(self) -> bool:
        return self.options.kubeconfig is None

    @property
    def apiserver(self) -> EmbeddedAPIServer:
        if self._apiserver is None:
            raise StateError("the embedded API server is not running", fix="start it first (start_apiserver)")
        return self._apiserver

    async def start_apiserver(self) -> None:
        """Start the embedded API server; after a stop, on the same port with the same objects and tokens."""
        if not self.embedded:
            raise UsageError("the API server is a real cluster's", fix="stop and start it only when it is embedded")
        if self._apiserver is not None:
            return
        server = EmbeddedAPIServer(
            listen=self._listen, data_dir=self.workdir / "apiserver", node_restricted=self.options.node_restricted
        )
        await server.__aenter__()
        self._apiserver = server
        self._listen = f"127.0.0.1:{server.url.rpartition(':')[2]}"
        server.kubeconfig(self.kubeconfig)

    async def stop_apiserver(self) -> None:
        if self._apiserver is not None:
            server, self._apiserver = self._apiserver, None
            await server.__aexit__(None, None, None)

    def node_kubeconfig(self) -> Path:
        """A kubeconfig with this node's identity (``--node-restricted`` confines it to the node's slices)."""
        return self.apiserver.node_kubeconfig(self.options.node_name, self.workdir / "node-kubeconfig")

    @property
    def kube(self) -> KubeClient:
        if self._kube is None:
            raise StateError("the testbed is not running")
        return self._kube

    # --- the node ---

    @property
    def node(self) -> Node:
        if self._node is None:
            raise StateError("the simulated node is not running", fix="start it first (start_node)")
        return self._node

    @property
    def node_running(self) -> bool:
        return self._node is not None

    async def start_node(self) -> Node:
        """Start the simulated kubelet: it loads its checkpoint and wipes the node's slices, as after a restart.
        Returns once that start-up wipe is over, so what comes next (a driver's first slices, an expectation
        that slices came back) never races it."""
        if self._node is None:
            self._state_claim.acquire()  # before the node: its DRA manager makes its checkpoint as it is made
            try:
                options = attrs.evolve(self.options.node, state_dir=str(self.state_dir))
                node = Node(self.options.node_name, str(self.registry_dir), kube=self.kube, options=options)
                await node.__aenter__()
            except BaseException:
                self._state_claim.release()
                raise
            self._node = node
            if node.startup_wipe is not None:
                await node.startup_wipe
        return self._node

    async def stop_node(self, *, crash: bool = False) -> None:
        """Stop the simulated kubelet; what it prepared stays in its checkpoint, as when a kubelet stops.

        A ``crash`` is a kill: the state dir keeps what was on disk at that instant, whatever the stop
        (its cancelled calls and tasks) would write after it."""
        if self._node is not None:
            node, self._node = self._node, None
            on_disk = _files(self.state_dir) if crash else None
            await node.__aexit__(None, None, None)
            self._state_claim.release()
            # read after the stop: a call the stop cancels is recorded then (CANCELLED), as a real kubelet's is
            self.past_calls.extend(node.recorder.records())
            if on_disk is not None:
                _restore(self.state_dir, on_disk)

    async def restart_node(self, options: NodeOptions | None = None, *, crash: bool = False) -> Node:
        """Stop (or ``crash``) and start the simulated kubelet; with ``options`` (another release, say) it starts
        with those."""
        await self.stop_node(crash=crash)
        if options is not None:
            self.options = attrs.evolve(self.options, node=options)
        return await self.start_node()

    def calls(self, *, driver: str | None = None, method: str | None = None) -> list[CallRecord]:
        """Every gRPC call of this testbed's node, across restarts, in completion order."""
        current = self._node.recorder.records(driver=driver, method=method) if self._node else []
        past = [
            record
            for record in self.past_calls
            if (driver is None or record.driver == driver)
            and (method is None or record.method == method or record.method.endswith(f"/{method}"))
        ]
        return past + current

    # --- drivers ---

    def placeholders(self, spec: DriverSpec, plugin_dir: Path) -> dict[str, str]:
        return placeholder_values(
            node=self.options.node_name,
            kubeconfig=self.kubeconfig,
            registry_dir=self.registry_dir,
            plugin_dir=plugin_dir,
            plugins_root=self.plugins_root,
            cdi_root=self.cdi_root,
            driver=spec.name or "",
        )

    def driver_process(self, spec: DriverSpec) -> DriverProcess:
        """A driver process for ``spec``, not started; its plugin dir and log are its own."""
        key = spec.key
        if any(driver.spec.key == key for driver in self.drivers):
            key = f"{key}{len(self.drivers)}"
        plugin_dir = self.plugins_root / key
        if spec.name:  # a kubelet host has the driver's dir under the plugins root (Kubernetes' test driver needs it)
            (self.plugins_root / spec.name).mkdir(parents=True, exist_ok=True)
        values = self.placeholders(spec, plugin_dir)
        proxied = self.workdir / "proxied" / key
        if spec.proxied:
            if self._proxies is None:
                raise UsageError(
                    f"driver {spec.key} is to run behind the fault proxy, and this testbed has none",
                    fix="give the testbed a proxy factory (proxies=kubelet_dra.workbench.tap.FaultProxy)",
                )
            (proxied / "registry").mkdir(parents=True, exist_ok=True)
            values["registry_dir"] = str(proxied / "registry")
        process = DriverProcess(spec, values, plugin_dir, self.workdir / f"{key}.log")
        if spec.proxied and self._proxies is not None:
            site = ProxySite(proxied / "registry", self.registry_dir, proxied / "tap", process.stop_soon)
            process.proxy = self._proxies(site)
        self.drivers.append(process)
        return process

    async def add_driver(self, spec: DriverSpec, *, wait: float | None = 30.0) -> DriverProcess:
        """Start a driver; with ``wait``, until the node can call it (or raise with the driver's log)."""
        process = self.driver_process(spec)
        await process.start()
        if wait is not None and spec.name is not None:
            await self.wait_registered(process, spec.name, timeout=wait)
        return process

    def usable(self, driver_name: str, *, replacing: Sequence[PluginInstance] = ()) -> bool:
        """Whether the node can call the driver and its registration has settled; with ``replacing`` (its
        instances before a driver restart), through an instance registered since: a killed driver's old one
        looks connected until the node notices, and its socket path answers "connection refused" meanwhile.

        Settled: no handshake running and no socket waiting to be unregistered. A retry of a stale socket
        can register the new process under the old socket's incarnation; the node then unregisters that
        instance (closing its connection under any call) and registers the socket again."""
        unsettled = (SocketPhase.IN_PROGRESS, SocketPhase.UNREGISTERING)
        if any(state.phase in unsettled for state in self.node.registrations()):
            return False
        return any(instance.connected for instance in self.instances_since(driver_name, replacing))

    def instances_since(self, driver_name: str, replacing: Sequence[PluginInstance]) -> list[PluginInstance]:
        """The node's instances of the driver but those of ``replacing`` (registered before a driver restart)."""
        return [i for i in self.node.plugins.instances(driver_name) if all(i is not old for old in replacing)]

    async def wait_registered(
        self,
        process: DriverProcess,
        driver_name: str,
        timeout: float = 30.0,
        *,
        replacing: Sequence[PluginInstance] = (),
    ) -> None:
        try:
            await self.until(
                lambda: self.usable(driver_name, replacing=replacing), timeout=timeout, what=f"{driver_name} registered"
            )
        except StateError as err:
            raise StateError(
                f"driver {driver_name} did not register within {timeout:g} s"
                + ("" if process.running else f" (its process exited with code {process.returncode})"),
                where=str(process.log_path),
                fix="read the driver's log: " + (process.log_tail(5).replace("\n", " | ") or "(empty)"),
            ) from err

    async def restart_driver(
        self, process: DriverProcess, driver_name: str, timeout: float = 30.0, *, kill: bool = False
    ) -> None:
        """Restart the driver's process (SIGKILL with ``kill``) and wait until the node registered the new one."""
        before = self.node.plugins.instances(driver_name)
        await process.restart(kill=kill)
        await self.wait_registered(process, driver_name, timeout, replacing=before)

    # --- waiting ---

    async def until(
        self, check: Callable[[], T | Awaitable[T]], *, timeout: float, what: str, interval: float = POLL_INTERVAL
    ) -> T:
        """Poll ``check`` (sync or async) until it returns something truthy; that value. ``StateError`` on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if asyncio.iscoroutine(value) or isinstance(value, Awaitable):
                value = await value
            if value:
                return value  # type: ignore[return-value]
            if time.monotonic() >= deadline:
                raise StateError(f"{what}: not within {timeout:g} s")
            await asyncio.sleep(interval)

    def describe(self) -> dict[str, Any]:
        """Where everything is, for reports and error messages."""
        return {
            "workdir": str(self.workdir),
            "node": self.options.node_name,
            "kubeconfig": str(self.kubeconfig),
            "registryDir": str(self.registry_dir),
            "cdiRoot": str(self.cdi_root),
            "stateDir": str(self.state_dir),
            "drivers": {driver.spec.key: str(driver.log_path) for driver in self.drivers},
        }


def _files(directory: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in directory.rglob("*") if path.is_file()}


def _restore(directory: Path, files: dict[Path, bytes]) -> None:
    """``directory`` as it was: the files of ``files`` with their bytes, no others."""
    for path in directory.rglob("*"):
        if path.is_file() and path not in files:
            path.unlink()
    for path, content in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_bytes() != content:
            path.write_bytes(content)
