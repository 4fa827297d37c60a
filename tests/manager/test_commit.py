"""Group commit: writes leave the loop, callers waiting at once share one, none returns before its change is written."""

from __future__ import annotations

import asyncio
import threading

import pytest

from kubelet_dra.manager.commit import GroupCommit


class Store:
    """A slow file: each write waits until the test lets it finish, and is noted with the state it wrote."""

    def __init__(self) -> None:
        self.state = 0
        self.written: list[int] = []
        self.release = threading.Event()
        self.fail = False

    def write(self, snapshot: int) -> None:
        self.release.wait(5)
        if self.fail:
            raise OSError("disk full")
        self.written.append(snapshot)


async def test_callers_that_ask_during_a_write_share_the_next_one() -> None:
    store = Store()
    commit = GroupCommit(lambda: store.state, store.write)
    store.state = 1
    first = asyncio.create_task(commit.sync())
    await asyncio.sleep(0.05)  # the first write is running (blocked in its thread)
    waiting = []
    for state in (2, 3, 4):
        store.state = state
        waiting.append(asyncio.create_task(commit.sync()))
    await asyncio.sleep(0.05)
    store.release.set()
    await asyncio.gather(first, *waiting)
    assert store.written == [1, 4]


async def test_a_failed_write_raises_in_its_caller_and_the_next_caller_writes_again() -> None:
    store = Store()
    store.release.set()
    commit = GroupCommit(lambda: store.state, store.write)
    store.fail = True
    with pytest.raises(OSError, match="disk full"):
        await commit.sync()
    store.fail, store.state = False, 7
    await commit.sync()
    assert store.written == [7]
