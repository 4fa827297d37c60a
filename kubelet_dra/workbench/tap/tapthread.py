"""``TapThread``: a ``Tap`` on an event loop of its own, in a thread, for a program that does other work meanwhile.

A kubelet gives a driver's GetInfo 1 s and its other calls their deadlines: an answer must not wait for whatever
else the program around the tap does on its loop. The replay on the real kubelet serves the embedded API server,
its watches and its checks on its loop; under load a kubelet's restart (its lists, watches and status writes, all
served there) held that loop long enough for the tap to let a GetInfo pass the kubelet's deadline, a failure the
kubelet without the tap would not have seen. On its own loop the tap answers as soon as the interpreter lets it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import threading
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

from kubelet_dra.peers.api.calls import CallRecorder
from kubelet_dra.peers.log import get_logger
from kubelet_dra.workbench.tap.faults import WireFaults
from kubelet_dra.workbench.tap.mirror import MirrorView
from kubelet_dra.workbench.tap.proxy import Tap

T = TypeVar("T")
STOP_TIMEOUT = 30.0
TAP_STOP_TIMEOUT = 10.0
"""How long the tap's own stop may take (its mirrors' servers let calls in flight end within a second) before
its loop is stopped under whatever still waits, which the log names."""
_log = get_logger("tap")


class TapThread:
    """``await start()``, ``mirrors()``, ``await stop()``: the tap made by ``make`` (called on the tap's own loop)."""

    def __init__(self, make: Callable[[], Tap]) -> None:
        self._make = make
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="tap", daemon=True)
        self._tap: Tap | None = None

    @classmethod
    def mirroring(
        cls,
        driver_registry_dir: Path,
        registry_dir: Path,
        *,
        socket_dir: Path,
        recorder: CallRecorder,
        faults: WireFaults | None = None,
    ) -> TapThread:
        """The tap a testbed puts between its drivers' registry dir and its node's: the real kubelet's recording
        tap, and each proxied driver's own (with ``faults``)."""
        dirs = (str(driver_registry_dir), str(registry_dir))
        return cls(functools.partial(Tap, *dirs, socket_dir=str(socket_dir), recorder=recorder, faults=faults))

    async def start(self) -> None:
        self._thread.start()
        self._tap = await self._on_tap_loop(self._started())

    async def _started(self) -> Tap:
        tap = self._make()
        await tap.start()
        return tap

    def mirrors(self) -> list[MirrorView]:
        """The tap's mirrors now, read on its loop (they change there)."""
        if self._tap is None:
            return []
        tap = self._tap

        async def read() -> list[MirrorView]:
            return tap.mirrors()

        return asyncio.run_coroutine_threadsafe(read(), self._loop).result(STOP_TIMEOUT)

    async def run(self, work: Callable[[], T]) -> T:
        """``work()`` on the tap's loop (what the tap's calls read, such as its wire knobs, changes there only)."""

        async def call() -> T:
            return work()

        return await self._on_tap_loop(call())

    async def stop(self) -> None:
        """Stop the tap (its mirrors go: the kubelet unregisters the drivers), then its loop and thread."""
        if self._tap is not None:
            tap, self._tap = self._tap, None
            try:
                await asyncio.wait_for(self._on_tap_loop(tap.stop()), TAP_STOP_TIMEOUT)
            except TimeoutError:
                pending = await self._on_tap_loop(_pending())
                _log.error("The tap did not stop in time; its loop is stopped under it", pending=pending)
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            await asyncio.to_thread(self._thread.join, STOP_TIMEOUT)
        if not self._loop.is_running():
            self._loop.close()

    async def _on_tap_loop(self, work: Coroutine[Any, Any, T]) -> T:
        future: concurrent.futures.Future[T] = asyncio.run_coroutine_threadsafe(work, self._loop)
        return await asyncio.wrap_future(future)


async def _pending() -> list[str]:
    """Where each task of the running loop but this one waits, innermost frame last: for a stop that hung."""
    tasks = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
    return [" > ".join(frame.f_code.co_qualname for frame in task.get_stack()) or repr(task) for task in tasks]
