"""The plugin manager: watcher → desired state → reconciler → handshake → handlers, for one node.

``kubelet_timing`` swaps only the reconciler's trigger: the kubelet's 1 s loop instead of
reacting to changes at once. Backoff, rules and messages are the same in both modes.
"""

from __future__ import annotations

import asyncio
import enum
import os
from collections.abc import Awaitable, Callable, Mapping

import attrs

from kubelet_dra.kubelet.pluginmanager.cache.state_of_world import (
    ActualStateOfWorld,
    DesiredPlugin,
    DesiredStateOfWorld,
)
from kubelet_dra.kubelet.pluginmanager.cache.types import PluginHandler
from kubelet_dra.kubelet.pluginmanager.diagnosis import Diagnosis, diagnose
from kubelet_dra.kubelet.pluginmanager.operationexecutor.operation_executor import OperationExecutor
from kubelet_dra.kubelet.pluginmanager.operationexecutor.operation_generator import (
    DEFAULT_TIMEOUTS,
    Handshake,
    HandshakeTimeouts,
    RegistrationFailed,
)
from kubelet_dra.kubelet.pluginmanager.pluginwatcher.plugin_watcher import PluginWatcher
from kubelet_dra.kubelet.pluginmanager.reconciler.reconciler import Reconciler
from kubelet_dra.kubelet.pluginmanager.reconciler.triggers import ChangeTrigger, PeriodicTrigger, Trigger
from kubelet_dra.peers.api.calls import CallRecorder
from kubelet_dra.peers.log import Logger, get_logger


class SocketPhase(enum.StrEnum):
    REGISTERED = "registered"
    IN_PROGRESS = "in progress"
    BACKOFF = "backoff"
    PENDING = "pending"
    UNREGISTERING = "unregistering"


@attrs.frozen
class SocketState:
    """Where one registration socket stands, for people and tools watching the node."""

    socket_path: str
    phase: SocketPhase
    name: str = ""
    endpoint: str = ""
    last_error: str = ""
    retry_at: float | None = None
    diagnosis: Diagnosis | None = None


def _ignore() -> None:
    return None


class PluginManager:
    def __init__(
        self,
        registry_dir: str,
        handlers: Mapping[str, PluginHandler],
        *,
        kubelet_timing: bool = False,
        timeouts: HandshakeTimeouts = DEFAULT_TIMEOUTS,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]],
        log: Logger | None = None,
        on_change: Callable[[], None] = _ignore,
        recorder: CallRecorder | None = None,
    ) -> None:
        self._log = log or get_logger("registration")
        self._on_change = on_change
        self._diagnoses: dict[str, Diagnosis] = {}
        self.trigger: Trigger = (
            PeriodicTrigger(sleep=sleep) if kubelet_timing else ChangeTrigger(clock=clock, sleep=sleep)
        )
        self.desired = DesiredStateOfWorld(clock=clock, on_change=self._changed)
        self.actual = ActualStateOfWorld(on_change=self._changed)
        self._executor = OperationExecutor(clock=clock, log=self._log, on_finished=self._changed)
        self._handshake = Handshake(
            handlers=handlers, actual=self.actual, timeouts=timeouts, log=self._log, recorder=recorder
        )
        self._reconciler = Reconciler(
            desired=self.desired,
            actual=self.actual,
            executor=self._executor,
            trigger=self.trigger,
            register=self._register,
            unregister=self._handshake.unregister,
        )
        self.watcher = PluginWatcher(registry_dir, self.desired, log=self._log, on_ignored=self._ignored)
        self._task: asyncio.Task[None] | None = None
        self._found_at_start: list[str] = []

    @property
    def registry_dir(self) -> str:
        return self.watcher.path

    async def start(self) -> None:
        await self.watcher.start()
        self._found_at_start = [plugin.socket_path for plugin in self.desired.plugins()]
        self._task = asyncio.create_task(self._reconciler.run(), name="plugin reconciler")

    async def stop(self) -> None:
        await self.watcher.stop()
        if self._task is not None:
            self._task.cancel()
            await asyncio.wait([self._task])
            self._task = None
        await self._executor.close()

    def first_attempts_done(self) -> bool:
        """Whether every socket found at start has registered, failed once, or gone."""
        settled = (SocketPhase.REGISTERED, SocketPhase.BACKOFF)
        return all(
            self.desired.get(path) is None or self._socket_state(path).phase in settled for path in self._found_at_start
        )

    def diagnoses(self) -> dict[str, Diagnosis]:
        """The latest failure of each socket that has not registered since and is still there (or desired)."""
        return dict(self._diagnoses)

    def sockets(self) -> list[SocketState]:
        """Every socket the manager knows, registered or not, sorted by path."""
        paths = sorted({p.socket_path for p in self.desired.plugins()} | {p.socket_path for p in self.actual.plugins()})
        return [self._socket_state(path) for path in paths]

    def _socket_state(self, path: str) -> SocketState:
        desired = self.desired.get(path)
        registered = self.actual.get(path)
        backoff = self._executor.backoff(path)
        if registered is not None and (desired is None or registered.uuid != desired.uuid):
            phase = SocketPhase.UNREGISTERING
        elif self._executor.is_running(path):
            phase = SocketPhase.IN_PROGRESS
        elif registered is not None:
            phase = SocketPhase.REGISTERED
        elif backoff is not None:
            phase = SocketPhase.BACKOFF
        else:
            phase = SocketPhase.PENDING
        return SocketState(
            socket_path=path,
            phase=phase,
            name=registered.name if registered else "",
            endpoint=registered.endpoint if registered else "",
            last_error=backoff.last_error if backoff else "",
            retry_at=backoff.retry_at if backoff else None,
            diagnosis=self._diagnoses.get(path),
        )

    async def _register(self, plugin: DesiredPlugin) -> None:
        try:
            await self._handshake.register(plugin)
        except RegistrationFailed as failure:
            self._diagnoses[plugin.socket_path] = failure.diagnosis
            raise
        self._diagnoses.pop(plugin.socket_path, None)

    def _ignored(self, path: str, reason: str) -> None:
        message = f"socket {path} ignored: {reason}"
        self._diagnoses[path] = diagnose("F1", socket=path, cause=reason, message=message)
        self._changed()

    def _changed(self) -> None:
        gone = [p for p in self._diagnoses if self.desired.get(p) is None and not os.path.lexists(p)]
        for path in gone:
            del self._diagnoses[path]
        self.trigger.poke()
        self._on_change()
