"""When the reconciler runs its next pass: the only difference between kubelet timing and ours.

The kubelet reconciles every second (1 s after each pass ends), so a new socket waits up to a
second and retries snap to that grid. By default kubelet-dra reconciles as soon as something
changed (a socket came or went, an operation finished) or a lock-out ended, which registers a
driver within milliseconds while keeping the same per-socket backoff.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Protocol

RECONCILE_PERIOD = 1.0


class Trigger(Protocol):
    def poke(self) -> None:
        """Something the reconciler acts on has changed."""

    async def wait(self, retry_at: float | None) -> None:
        """Return when the next pass is due; ``retry_at`` is when the earliest lock-out ends."""


class PeriodicTrigger:
    """The kubelet's sliding one-second loop; pokes are ignored."""

    def __init__(self, *, sleep: Callable[[float], Awaitable[None]], period: float = RECONCILE_PERIOD) -> None:
        self._sleep = sleep
        self._period = period

    def poke(self) -> None:
        return None

    async def wait(self, retry_at: float | None) -> None:
        await self._sleep(self._period)


class ChangeTrigger:
    """Wakes on every poke, or when the earliest lock-out ends."""

    def __init__(self, *, clock: Callable[[], float], sleep: Callable[[float], Awaitable[None]]) -> None:
        self._clock = clock
        self._sleep = sleep
        self._changed = asyncio.Event()

    def poke(self) -> None:
        self._changed.set()

    async def wait(self, retry_at: float | None) -> None:
        if not self._changed.is_set():
            waiters: list[asyncio.Future[object]] = [asyncio.ensure_future(self._changed.wait())]
            if retry_at is not None:  # ``sleep`` may give any awaitable, not only a coroutine
                waiters.append(asyncio.ensure_future(self._sleep(max(0.0, retry_at - self._clock()))))
            try:
                await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiter in waiters:  # they end on their own; awaiting them could swallow our own cancellation
                    waiter.cancel()
        self._changed.clear()
