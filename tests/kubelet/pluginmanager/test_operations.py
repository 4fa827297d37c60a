"""Per-socket operations and backoff (the kubelet's goroutine map), and the reconciler triggers."""

from __future__ import annotations

import asyncio
import logging

import pytest

from kubelet_dra.kubelet.pluginmanager.operationexecutor.operation_executor import OperationExecutor, OperationFailed
from kubelet_dra.kubelet.pluginmanager.reconciler.triggers import ChangeTrigger, PeriodicTrigger
from kubelet_dra.peers.gotext import go_duration
from kubelet_dra.peers.log import get_logger

from .support import FakeClock, settle


class Recorder(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def log_lines() -> list[str]:
    handler = Recorder()
    logger = logging.getLogger("kubelet_dra.test-operations")
    logger.addHandler(handler)
    yield handler.messages
    logger.removeHandler(handler)


async def fail() -> None:
    raise OperationFailed("RegisterPlugin error -- boom")


async def succeed() -> None:
    return None


async def test_backoff_doubles_from_half_a_second_to_122_seconds_and_resets_on_success(
    clock: FakeClock, log_lines: list[str]
):
    executor = OperationExecutor(clock=clock.time, log=get_logger("test-operations"), on_finished=lambda: None)
    durations = []
    for _ in range(11):
        assert executor.start("/reg/a.sock", fail)
        await settle()
        backoff = executor.backoff("/reg/a.sock")
        durations.append(backoff.duration)
        assert not executor.start("/reg/a.sock", fail), "locked out until the backoff ends"
        assert executor.retry_at() == backoff.retry_at
        await clock.advance(backoff.duration)
        assert executor.retry_at() is None, "an ended lock-out must not wake the reconciler again"
    assert durations == [0.5, 1, 2, 4, 8, 16, 32, 64, 122, 122, 122]
    assert log_lines[0].startswith('Operation for "/reg/a.sock" failed. No retries permitted until ')
    assert log_lines[0].endswith("(durationBeforeRetry 500ms). Error: RegisterPlugin error -- boom")
    assert "(durationBeforeRetry 2m2s)" in log_lines[-1]

    assert executor.start("/reg/a.sock", succeed)
    await settle()
    assert executor.backoff("/reg/a.sock") is None
    assert executor.start("/reg/a.sock", fail)
    await settle()
    assert executor.backoff("/reg/a.sock").duration == 0.5


async def test_one_operation_per_key_at_a_time_but_keys_run_concurrently(clock: FakeClock):
    executor = OperationExecutor(clock=clock.time, log=get_logger("test-operations"), on_finished=lambda: None)
    release = asyncio.Event()

    async def blocked() -> None:
        await release.wait()

    assert executor.start("a", blocked)
    assert not executor.start("a", succeed)
    assert executor.start("b", blocked)
    assert executor.is_running("a") and executor.is_running("b")
    release.set()
    await settle()
    assert not executor.is_running("a") and not executor.is_running("b")
    await executor.close()


def test_go_durations():
    assert [go_duration(round(d * 1e9)) for d in (0.5, 1, 2, 16, 64, 122)] == [
        "500ms",
        "1s",
        "2s",
        "16s",
        "1m4s",
        "2m2s",
    ]


async def test_periodic_trigger_ignores_pokes_and_waits_one_second(clock: FakeClock):
    trigger = PeriodicTrigger(sleep=clock.sleep)
    waiting = asyncio.create_task(trigger.wait(retry_at=None))
    await settle()
    trigger.poke()
    await settle()
    assert not waiting.done()
    assert clock.sleeping() == [1.0]
    await clock.advance(1.0)
    assert waiting.done()


async def test_change_trigger_wakes_on_poke_or_at_the_end_of_a_lockout(clock: FakeClock):
    trigger = ChangeTrigger(clock=clock.time, sleep=clock.sleep)
    waiting = asyncio.create_task(trigger.wait(retry_at=None))
    await settle()
    assert not waiting.done()
    trigger.poke()
    await settle()
    assert waiting.done()

    waiting = asyncio.create_task(trigger.wait(retry_at=clock.time() + 2))
    await settle()
    assert clock.sleeping() == [2.0]
    await clock.advance(2.0)
    assert waiting.done()
    assert clock.sleeping() == [], "the losing waiter is cancelled"
