"""One operation at a time per socket path, with per-path exponential backoff (the kubelet's goroutine map).

Register and unregister operations of one path share the key, so they never overlap. After a
failure the path is locked out for 0.5 s, then 1 s, 2 s, … up to 2 min 2 s; success forgets it.
Starting an operation for a busy or locked-out path fails silently: the next reconciler pass
tries again, exactly how the kubelet paces its retries.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

import attrs

from kubelet_dra.peers.errors import KubeletError
from kubelet_dra.peers.gotext import go_duration
from kubelet_dra.peers.log import Logger

INITIAL_DURATION_BEFORE_RETRY = 0.5
MAX_DURATION_BEFORE_RETRY = 122.0


@attrs.frozen
class ExponentialBackoff:
    """The lock-out of a path after its last failure (goroutinemap's ``exponentialbackoff``, not ``wait.Backoff``)."""

    duration: float
    last_error_time: float
    last_error: str

    @property
    def retry_at(self) -> float:
        return self.last_error_time + self.duration

    def next(self, error: str, now: float) -> ExponentialBackoff:
        duration = min(2 * self.duration, MAX_DURATION_BEFORE_RETRY)
        return ExponentialBackoff(duration, now, error)


def first_backoff(error: str, now: float) -> ExponentialBackoff:
    return ExponentialBackoff(INITIAL_DURATION_BEFORE_RETRY, now, error)


class OperationFailed(KubeletError):
    """An operation's error; its text is what the kubelet would log for the attempt."""


def go_time(epoch: float) -> str:
    """Go's ``time.Time`` text (UTC), as it appears in the kubelet's backoff message."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(epoch)) + f".{int(epoch % 1 * 1000):03d} +0000 UTC"


class OperationExecutor:
    """Runs keyed operations as tasks; tells the reconciler when the earliest lock-out ends."""

    def __init__(self, *, clock: Callable[[], float], log: Logger, on_finished: Callable[[], None]) -> None:
        self._clock = clock
        self._log = log
        self._on_finished = on_finished
        self._running: dict[str, asyncio.Task[None]] = {}
        self._backoff: dict[str, ExponentialBackoff] = {}

    def start(self, key: str, operation: Callable[[], Awaitable[None]]) -> bool:
        """Start ``operation`` for ``key`` unless one is running or the key is locked out."""
        if key in self._running:
            return False
        backoff = self._backoff.get(key)
        if backoff is not None and self._clock() < backoff.retry_at:
            return False
        self._running[key] = asyncio.create_task(self._run(key, operation), name=f"plugin operation {key}")
        return True

    def is_running(self, key: str) -> bool:
        return key in self._running

    def backoff(self, key: str) -> ExponentialBackoff | None:
        return self._backoff.get(key)

    def retry_at(self) -> float | None:
        """When the earliest lock-out still in force ends; ``None`` when no idle key is locked out.

        Lock-outs outlive their operations (a removed socket keeps its backoff, as in the kubelet,
        so a quick re-creation is still paced); only future ends matter to the reconciler.
        """
        now = self._clock()
        times = [b.retry_at for key, b in self._backoff.items() if key not in self._running and b.retry_at > now]
        return min(times, default=None)

    async def close(self) -> None:
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _run(self, key: str, operation: Callable[[], Awaitable[None]]) -> None:
        try:
            await operation()
        except OperationFailed as err:
            self._failed(key, str(err))
        except Exception as err:  # an operation's bug must not stop retries of its socket, as in the kubelet
            self._failed(key, f"{type(err).__name__}: {err}")
        else:
            self._backoff.pop(key, None)
        finally:
            self._running.pop(key, None)
            self._on_finished()

    def _failed(self, key: str, error: str) -> None:
        now = self._clock()
        previous = self._backoff.get(key)
        backoff = previous.next(error, now) if previous else first_backoff(error, now)
        self._backoff[key] = backoff
        self._log.error(
            f'Operation for "{key}" failed. No retries permitted until {go_time(backoff.retry_at)}'
            f" (durationBeforeRetry {go_duration(round(backoff.duration * 1e9))}). Error: {error}",
            socket=key,
        )
