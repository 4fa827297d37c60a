"""The plugin manager's two caches: what the registry directory holds and what is registered.

Like the kubelet, every add of a socket path gets a fresh UUID, so a socket re-created at the
same path differs from the registered one and is unregistered, then registered again.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import attrs


@attrs.frozen
class DesiredPlugin:
    """A registration socket found in the registry directory."""

    socket_path: str
    uuid: str
    timestamp: float


@attrs.frozen
class RegisteredPlugin:
    """A registration socket whose handshake reached the handler, with what the handler was told."""

    socket_path: str
    uuid: str
    timestamp: float
    handler: Any
    name: str
    endpoint: str


def _ignore() -> None:
    return None


class DesiredStateOfWorld:
    """Socket path → the socket's current incarnation; filled by the watcher."""

    def __init__(self, *, clock: Callable[[], float], on_change: Callable[[], None] = _ignore) -> None:
        self._clock = clock
        self._on_change = on_change
        self._plugins: dict[str, DesiredPlugin] = {}

    def add_or_update(self, socket_path: str) -> DesiredPlugin:
        plugin = DesiredPlugin(socket_path, str(uuid.uuid4()), self._clock())
        self._plugins[socket_path] = plugin
        self._on_change()
        return plugin

    def remove(self, socket_path: str) -> None:
        if self._plugins.pop(socket_path, None) is not None:
            self._on_change()

    def get(self, socket_path: str) -> DesiredPlugin | None:
        return self._plugins.get(socket_path)

    def plugins(self) -> list[DesiredPlugin]:
        return list(self._plugins.values())


class ActualStateOfWorld:
    """Socket path → the registered incarnation; written by the register/unregister operations."""

    def __init__(self, *, on_change: Callable[[], None] = _ignore) -> None:
        self._on_change = on_change
        self._plugins: dict[str, RegisteredPlugin] = {}

    def add(self, plugin: RegisteredPlugin) -> None:
        self._plugins[plugin.socket_path] = plugin
        self._on_change()

    def remove(self, socket_path: str) -> None:
        if self._plugins.pop(socket_path, None) is not None:
            self._on_change()

    def get(self, socket_path: str) -> RegisteredPlugin | None:
        return self._plugins.get(socket_path)

    def is_registered(self, plugin: DesiredPlugin) -> bool:
        registered = self._plugins.get(plugin.socket_path)
        return registered is not None and registered.uuid == plugin.uuid

    def plugins(self) -> list[RegisteredPlugin]:
        return list(self._plugins.values())
