"""Group commit: large writes leave the loop, small ones stay, callers waiting at once share one, none returns
before its change is written."""

from __future__ import annotations

import asyncio
import threading

import pytest

from kubelet_dra.kubelet.cm.dra.state.checkpointer import GroupCommit


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


async def test_a_small_write_happens_in_the_loop_and_a_large_one_in_a_thread() -> None:
    writers: list[int] = []
    small = True
    commit = GroupCommit(lambda: 0, lambda _: writers.append(threading.get_ident()), inline=lambda: small)
    await commit.sync()
    small = False
    await commit.sync()
    assert writers[0] == threading.get_ident()
    assert writers[1] != threading.get_ident()


async def test_a_small_write_asked_for_while_a_large_one_runs_waits_and_shares_the_next() -> None:
    store = Store()
    small = False
    commit = GroupCommit(lambda: store.state, store.write, inline=lambda: small)
    store.state = 1
    first = asyncio.create_task(commit.sync())
    await asyncio.sleep(0.05)  # the large write is running in its thread
    small, store.state = True, 2
    second = asyncio.create_task(commit.sync())
    await asyncio.sleep(0.05)
    assert not second.done()  # never two writes of the file at once
    store.release.set()
    await asyncio.gather(first, second)
    assert store.written == [1, 2]
