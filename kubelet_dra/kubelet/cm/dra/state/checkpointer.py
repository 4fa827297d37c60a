"""Group commit: the checkpoint written once for every change made before the write, off the loop when large.

The kubelet writes the checkpoint under its cache lock, so one pod worker waits for its write while the
others go on. In one event loop a blocking write (``Checkpoint.write``: temp file, fsync, rename; the
directory is not fsynced, as the kubelet's is not) stalls every pod instead, and its cost grows with the
file. So a large file is written in a thread, one write at a time, and a write covers every change made
before it began: callers that ask while a write runs share the next one instead of queueing one each.
A small file (``inline`` says when) is written in the loop when no write runs, because then the write
costs less than the hop to a thread and back (two wake-ups, each waiting for a core on a busy machine).
Every caller still returns only once its own changes are on disk, so a driver is never called before
the checkpoint says so. The costs behind these choices are measured in benchmarks/README.md.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class GroupCommit(Generic[T]):
    """``await commit.sync()`` after a change: ``snapshot`` is taken in the loop, ``write`` runs in a thread,
    or in the loop while ``inline()`` holds."""

    def __init__(
        self, snapshot: Callable[[], T], write: Callable[[T], None], *, inline: Callable[[], bool] = lambda: False
    ) -> None:
        self._snapshot = snapshot
        self._write = write
        self._inline = inline
        self._lock = asyncio.Lock()
        self._asked = 0
        self._written = 0
        """The number of ``sync`` calls whose changes a successful write covered."""

    async def sync(self) -> None:
        """Return once a write that began after this call succeeded; a failed write raises in its caller only."""
        self._asked += 1
        mine = self._asked
        if not self._lock.locked() and self._inline():
            self._write(self._snapshot())  # no await: it covers every change made before this call
            self._written = mine
            return
        async with self._lock:
            if self._written >= mine:
                return
            covers = self._asked  # taken with the snapshot, no await between: both see the same changes
            await asyncio.to_thread(self._write, self._snapshot())
            self._written = covers
