"""Reference driver starts by fork: a real process in its own session, signalled and reaped as an exec'd one."""

from __future__ import annotations

import io
import os
import shutil
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubelet_dra.peers import log
from kubelet_dra.peers.errors import StateError
from kubelet_dra.workbench.testbed import DriverSpec, Testbed, objects
from kubelet_dra.workbench.testbed.forked import AVAILABLE, DRIVER_FORK_SERVER, ENABLE

GPU = "gpu.example.com"

pytestmark = pytest.mark.skipif(not AVAILABLE, reason="this platform has no pidfds: every driver is exec'd")

FORKED = {ENABLE: "1"}
"""The suite's conftest sets it for every test; said here too, since these tests are about it."""


@pytest.fixture
def started() -> Iterator[io.StringIO]:
    """The testbed's log, where each driver start says how the driver was started."""
    stream = io.StringIO()
    log.configure(0, stream)
    try:
        yield stream
    finally:
        log.configure(0)


def _how(stream: io.StringIO) -> list[str]:
    return [line.split("how=")[1].split()[0] for line in stream.getvalue().splitlines() if "Started driver" in line]


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"


async def test_the_reference_driver_is_forked_into_its_own_session_with_its_environment_and_output(
    started: io.StringIO,
):
    async with Testbed() as bed:
        driver = await bed.add_driver(DriverSpec(GPU, env={**FORKED, "KUBELET_DRA_DEVICES": "3"}))
        assert driver.pid is not None
        assert _parent(driver.pid) not in (os.getpid(), 1), "a fork server's child, not this process's"
        assert os.getsid(driver.pid) == driver.pid, "its own session, as start_new_session gives an exec'd driver"
        slices = await bed.until(lambda: objects.list_objects(bed.kube, "ResourceSlice"), timeout=20, what="slices")
        assert [len(s["spec"]["devices"]) for s in slices] == [3], "KUBELET_DRA_DEVICES reached the driver"
        assert os.readlink(f"/proc/{driver.pid}/fd/0") == os.devnull
        assert Path(os.readlink(f"/proc/{driver.pid}/fd/1")) == driver.log_path
        assert bed.node.plugins.usable(GPU), "it registered over its real sockets"
        assert await driver.stop() == 0, "SIGTERM: the driver's own clean exit code"
        assert "--- start 1:" in driver.log_path.read_text()
    assert _how(started) == ["forked"], "the log says the driver was forked"


async def test_a_killed_forked_driver_reports_the_signal_and_a_restart_forks_a_new_process():
    async with Testbed() as bed:
        driver = await bed.add_driver(DriverSpec(GPU, env=FORKED))
        first = driver.pid
        assert await driver.kill() == -signal.SIGKILL
        assert not driver.running
        await bed.restart_driver(driver, GPU)
        assert driver.pid not in (None, first)
        assert bed.node.plugins.usable(GPU)


async def test_a_forked_driver_that_exits_by_itself_is_reported_with_its_code_and_log():
    bed = Testbed()
    with pytest.raises(StateError) as caught:
        async with bed:
            await bed.add_driver(DriverSpec(GPU, env=FORKED, extra_args=("--no-such-flag",)), wait=5)
    message = str(caught.value)
    assert "exited with code 2" in message, "argparse's usage error, as from an exec'd python"
    assert "unrecognized arguments: --no-such-flag" in message
    shutil.rmtree(bed.workdir)


async def test_other_commands_and_other_interpreter_settings_are_execed(started: io.StringIO):
    argv = [sys.executable, "-m", "kubelet_dra", "driver", "--driver-name", GPU]
    assert DRIVER_FORK_SERVER.forkable(argv, {**os.environ, ENABLE: "1"})
    assert not DRIVER_FORK_SERVER.forkable(argv, {**os.environ, ENABLE: ""}), "only when asked for"
    assert not DRIVER_FORK_SERVER.forkable(argv, {**os.environ, ENABLE: "1", "PYTHONMALLOC": "debug"}), (
        "read before main"
    )
    assert not DRIVER_FORK_SERVER.forkable(["/usr/bin/env", *argv], {**os.environ, ENABLE: "1"})
    assert not DRIVER_FORK_SERVER.forkable(
        [sys.executable, "-m", "kubelet_dra", "apiserver"], {**os.environ, ENABLE: "1"}
    )
    async with Testbed() as bed:
        other = "0" if os.environ.get("PYTHONNOUSERSITE") else "1"
        driver = await bed.add_driver(DriverSpec(GPU, env={**FORKED, "PYTHONNOUSERSITE": other}))
        assert driver.pid is not None and _parent(driver.pid) == os.getpid(), "exec'd by this process"
        assert bed.node.plugins.usable(GPU)
    assert _how(started) == ["exec"], "the log says the driver was exec'd"


async def test_a_fork_server_that_died_is_started_again_at_the_next_start():
    async with Testbed() as bed:
        driver = await bed.add_driver(DriverSpec(GPU, env=FORKED))
        server = _parent(driver.pid or 0)
        os.kill(server, signal.SIGKILL)
        assert bed.node.plugins.usable(GPU), "a running driver outlives the server, as an exec'd one its owner"
        assert await driver.stop() == -1, "its exit code died with the server; the pidfd still stopped it"
        assert _state(driver.pid or 0) in ("gone", "Z"), "exited (a zombie until this machine's init reaps it)"
        await bed.restart_driver(driver, GPU)
        assert driver.pid is not None and _parent(driver.pid) not in (server, os.getpid())
        assert bed.node.plugins.usable(GPU)
