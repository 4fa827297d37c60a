"""``Tap``: the recording proxy between a kubelet's registry dir and the drivers of another dir.

Drivers register in the tap's *driver registry dir*; the tap watches it with the kubelet's own
plugin watcher (same rules: sub-directories, dot names, a re-created socket is a new one) and
mirrors each registration socket at the same relative path in the kubelet's registry dir. A
socket that goes from the driver dir makes its mirror go, and a re-created one is mirrored anew,
so the kubelet sees every registration and unregistration it would have seen. Many drivers share
one tap: each gets its own mirror. Usable as a library (``async with Tap(...)``); every call is
in ``tap.recorder`` and, with a file, appended there as it ends.
"""

from __future__ import annotations

import asyncio
import os
import time
from types import TracebackType

from kubelet_dra.kubelet.pluginmanager.cache.state_of_world import DesiredStateOfWorld
from kubelet_dra.kubelet.pluginmanager.pluginwatcher.plugin_watcher import PluginWatcher
from kubelet_dra.peers.api.calls import CallRecorder
from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.peers.log import Logger, get_logger
from kubelet_dra.workbench.tap.faults import WireFaults
from kubelet_dra.workbench.tap.forward import OpenCall
from kubelet_dra.workbench.tap.mirror import DriverMirror, MirrorView
from kubelet_dra.workbench.tap.owned import SocketRefused, check_length

TAP_SOCKET_DIR = "kubelet-dra-tap"
CANCEL_AGAIN = 0.1
"""How long a stop waits for the mirroring task to end before it cancels it again."""
SERVICE_SOCKET = "dra.sock"
"""The name of the tap's socket for one driver's endpoint, in a dir of its own under the socket dir."""


def default_socket_dir(registry_dir: str) -> str:
    """Where the tap's service sockets go by default: ``<registry dir>/../plugins/kubelet-dra-tap``, beside the
    drivers' own (``/var/lib/kubelet/plugins/kubelet-dra-tap`` on a default node), outside the watched dir."""
    return os.path.join(os.path.dirname(os.path.abspath(registry_dir)), "plugins", TAP_SOCKET_DIR)


def _inside(path: str, directory: str) -> bool:
    """Whether ``path`` is ``directory`` or under it, symbolic links resolved."""
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return os.path.commonpath([path, directory]) == directory


def _overlap(one: str, other: str) -> bool:
    return _inside(one, other) or _inside(other, one)


class Tap:
    def __init__(
        self,
        driver_registry_dir: str,
        registry_dir: str,
        *,
        socket_dir: str | None = None,
        recorder: CallRecorder | None = None,
        log: Logger | None = None,
        faults: WireFaults | None = None,
    ) -> None:
        """``faults``: the wire knobs carried out on every call through the tap (``workbench.tap.faults``)."""
        self.driver_registry_dir = os.path.abspath(driver_registry_dir)
        self.registry_dir = os.path.abspath(registry_dir)
        self.socket_dir = os.path.abspath(socket_dir or default_socket_dir(registry_dir))
        self.recorder = recorder or CallRecorder()
        self._log = log or get_logger("tap")
        self.faults = faults
        self._check_dirs()
        self._changed = asyncio.Event()
        self._desired = DesiredStateOfWorld(clock=time.time, on_change=self._changed.set)
        self._watcher = PluginWatcher(self.driver_registry_dir, self._desired, log=self._log)
        self._mirrors: dict[str, tuple[str, DriverMirror]] = {}
        """Driver socket path → (the incarnation's UUID, its mirror)."""
        self._refused: dict[str, str] = {}
        """Driver socket path → why it is not mirrored (said once, tried again at the next change)."""
        self._task: asyncio.Task[None] | None = None

    def _check_dirs(self) -> None:
        """The kubelet's registry dir must be there (a mistyped one would be watched by no kubelet), and must not
        see the drivers' own sockets, or the kubelet would register them past the tap; the tap's own sockets must
        not be in the drivers' dir, or the tap would mirror them into the kubelet's. Links are followed."""
        if not os.path.isdir(self.registry_dir):
            raise ConfigError(
                "the kubelet's plugin registry directory does not exist",
                where=self.registry_dir,
                fix="start the kubelet first, or pass the --registry-dir it watches",
            )
        for flag, path in (("--driver-registry-dir", self.driver_registry_dir), ("--socket-dir", self.socket_dir)):
            if _overlap(path, self.registry_dir):
                raise ConfigError(
                    f"{path} and the kubelet's registry dir {self.registry_dir} overlap; the kubelet would"
                    " register the drivers' sockets itself, past the tap",
                    where=flag,
                    fix="give a directory outside the kubelet's registry dir, e.g. /var/lib/kubelet/tap-registry",
                )
        if _overlap(self.socket_dir, self.driver_registry_dir):
            raise ConfigError(
                f"{self.socket_dir} and the drivers' registry dir {self.driver_registry_dir} overlap; the tap would"
                " mirror its own sockets into the kubelet's registry dir",
                where="--socket-dir",
                fix="leave --socket-dir out (the default is apart from both) or give one outside --driver-registry-dir",
            )
        check_length(os.path.join(self.socket_dir, "x", SERVICE_SOCKET), "--socket-dir")

    def mirrors(self) -> list[MirrorView]:
        return [mirror.view() for _, mirror in self._mirrors.values()]

    def open_calls(self) -> list[OpenCall]:
        """The calls in progress through every mirror, oldest first (records come only when a call ends)."""
        calls = [call for _, mirror in self._mirrors.values() for call in mirror.open_calls()]
        return sorted(calls, key=lambda call: call.started_at)

    async def start(self) -> None:
        """Watch the drivers' dir and mirror what is there; ``SocketRefused`` (nothing left running) when a driver
        there cannot be mirrored (see ``kubelet_dra.workbench.tap.owned``)."""
        await self._watcher.start()
        try:
            await self._reconcile(strict=True)
        except SocketRefused:
            await self.stop()
            raise
        self._task = asyncio.create_task(self._follow(), name="tap mirrors")
        self._log.info("Tap started", driverRegistryDir=self.driver_registry_dir, registryDir=self.registry_dir)

    async def stop(self) -> None:
        """Stop watching and remove every mirrored socket still the tap's (the kubelet unregisters the drivers)."""
        await self._watcher.stop()
        if self._task is not None:
            task, self._task = self._task, None
            while not task.done():  # a cancel that lands in a gRPC server's stop is swallowed there: cancel again
                task.cancel()
                await asyncio.wait([task], timeout=CANCEL_AGAIN)
        for path in list(self._mirrors):
            await self._mirrors.pop(path)[1].stop()

    async def __aenter__(self) -> Tap:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.stop()

    async def _follow(self) -> None:
        while True:
            await self._changed.wait()
            self._changed.clear()
            await self._reconcile(strict=False)

    async def _reconcile(self, *, strict: bool) -> None:
        """Mirror the driver sockets there are, each incarnation once; remove mirrors of gone or replaced ones.
        A driver that cannot be mirrored raises ``SocketRefused`` when ``strict``, else is logged once."""
        desired = {plugin.socket_path: plugin.uuid for plugin in self._desired.plugins()}
        for path, (uuid, mirror) in list(self._mirrors.items()):
            if desired.get(path) != uuid:
                del self._mirrors[path]
                await mirror.stop()
        for path in set(self._refused) - set(desired):
            del self._refused[path]
        for path, uuid in desired.items():
            if path in self._mirrors:
                continue
            try:
                mirror = self._mirror(path)
                await mirror.start()
            except SocketRefused as err:
                if strict:
                    raise
                if self._refused.get(path) != str(err):
                    self._log.error("Not mirrored", str(err), socket=path)
                self._refused[path] = str(err)
                continue
            except RuntimeError as err:  # grpc could not bind the mirror socket
                self._log.error("Cannot mirror the registration socket", err, socket=path)
                continue
            self._refused.pop(path, None)
            self._mirrors[path] = (uuid, mirror)

    def _mirror(self, path: str) -> DriverMirror:
        """The mirror of the driver socket ``path``; ``SocketRefused`` when one of its sockets could not be dialled."""
        relative = os.path.relpath(path, self.driver_registry_dir)
        mirror_socket = os.path.join(self.registry_dir, relative)
        service_socket = os.path.join(self.socket_dir, relative.removesuffix(".sock"), SERVICE_SOCKET)
        check_length(mirror_socket, "--registry-dir")
        check_length(service_socket, "--socket-dir")
        return DriverMirror(path, mirror_socket, service_socket, self.recorder, self._log, self.faults)
