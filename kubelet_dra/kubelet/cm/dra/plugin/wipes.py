"""Per-driver timers that wipe a driver's ResourceSlices once it has been unusable for the wiping delay.

Arming a driver that already has a timer (waiting, wiping, or done) keeps the original fire time;
cancelling (the driver became usable) stops a timer that has not fired, while a wipe that has
started runs to completion (docs/protocol.md#resourceslice-wiping).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import attrs

from kubelet_dra.peers.log import Logger

DEFAULT_WIPING_DELAY = 30.0


@attrs.define
class _Work:
    fire_at: float
    task: asyncio.Task[None]
    started: bool = False


class WipeScheduler:
    def __init__(
        self,
        wipe: Callable[[str], Awaitable[object]],
        *,
        delay: float,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]],
        log: Logger,
        on_change: Callable[[], None],
    ) -> None:
        self._wipe = wipe
        self.delay = delay
        self._clock = clock
        self._sleep = sleep
        self._log = log
        self._on_change = on_change
        self._work: dict[str, _Work] = {}
        self._detached: set[asyncio.Task[None]] = set()

    def arm(self, driver: str) -> None:
        if driver in self._work:
            return
        fire_at = self._clock() + self.delay
        task = asyncio.create_task(self._run(driver), name=f"wipe timer {driver}")
        self._work[driver] = _Work(fire_at, task)
        self._log.v(3).info("Scheduled ResourceSlice wiping", driverName=driver, delay=self.delay)
        self._on_change()

    def cancel(self, driver: str) -> None:
        work = self._work.pop(driver, None)
        if work is None:
            return
        if work.started:
            if not work.task.done():
                self._detached.add(work.task)
                work.task.add_done_callback(self._detached.discard)
        else:
            work.task.cancel()
            self._log.v(3).info("Cancelled ResourceSlice wiping, driver usable again", driverName=driver)
        self._on_change()

    def pending(self) -> dict[str, float]:
        """Driver → fire time of timers that have not fired yet."""
        return {driver: work.fire_at for driver, work in self._work.items() if not work.started}

    async def close(self) -> None:
        tasks = [work.task for work in self._work.values()] + list(self._detached)
        self._work.clear()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    async def _run(self, driver: str) -> None:
        work = self._work[driver]
        await self._sleep(max(0.0, work.fire_at - self._clock()))
        work.started = True
        self._on_change()
        await self._wipe(driver)
        self._on_change()
