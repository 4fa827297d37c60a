"""The reconciler: brings the actual state in line with the desired state, one operation per socket.

Each pass first unregisters what is registered but no longer desired (or desired with a new
UUID: the socket was re-created), then registers what is desired but not registered. What
schedules the passes is the ``Trigger``; everything else is identical in both timing modes.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

from kubelet_dra.kubelet.pluginmanager.cache.state_of_world import (
    ActualStateOfWorld,
    DesiredPlugin,
    DesiredStateOfWorld,
    RegisteredPlugin,
)
from kubelet_dra.kubelet.pluginmanager.operationexecutor.operation_executor import OperationExecutor
from kubelet_dra.kubelet.pluginmanager.reconciler.triggers import Trigger


class Reconciler:
    def __init__(
        self,
        *,
        desired: DesiredStateOfWorld,
        actual: ActualStateOfWorld,
        executor: OperationExecutor,
        trigger: Trigger,
        register: Callable[[DesiredPlugin], Awaitable[None]],
        unregister: Callable[[RegisteredPlugin], Awaitable[None]],
    ) -> None:
        self._desired = desired
        self._actual = actual
        self._executor = executor
        self._trigger = trigger
        self._register = register
        self._unregister = unregister

    def reconcile(self) -> None:
        """One pass; operations that cannot start now (busy, locked out) are retried by a later pass."""
        for registered in self._actual.plugins():
            desired = self._desired.get(registered.socket_path)
            if desired is None or desired.uuid != registered.uuid:
                self._executor.start(registered.socket_path, functools.partial(self._unregister, registered))
        for desired in self._desired.plugins():
            if not self._actual.is_registered(desired):
                self._executor.start(desired.socket_path, functools.partial(self._register, desired))

    async def run(self) -> None:
        while True:
            self.reconcile()
            await self._trigger.wait(self._executor.retry_at())
