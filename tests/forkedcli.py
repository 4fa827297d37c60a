"""``kubelet-dra`` commands as the tests start them: forked from a server that imported every command once.

The tests start a ``kubelet-dra`` command about 200 times; each exec pays half a second of CPU in
imports. With the suite's ``KUBELET_DRA_FORK_DRIVERS=1`` (conftest) the commands are forked from
the fork server the testbed uses for drivers (``kubelet_dra.workbench.testbed.forked``), here with
every command imported: a real process in its own session, with pipes for its output, its own exit
code and signals. Anything the server cannot start as the interpreter would is exec'd.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Mapping, Sequence

from kubelet_dra.cli import SUBCOMMANDS
from kubelet_dra.workbench.testbed.forked import ForkedProcess, ForkServer

CLI_FORK_SERVER = ForkServer(("kubelet_dra.cli", *(f"kubelet_dra.cli.{name}" for name in SUBCOMMANDS)), None)
PIPE_HOLDS = 65536
"""Input is written to the command's stdin pipe at once, so only what a pipe holds; more is exec'd."""

Process = asyncio.subprocess.Process


class ForkedCommand:
    """The parts of ``asyncio.subprocess.Process`` the tests use, for a forked command and its pipes."""

    def __init__(
        self,
        process: ForkedProcess,
        stdin: int | None,
        stdout: asyncio.StreamReader | None,
        stderr: asyncio.StreamReader | None,
    ) -> None:
        self._process = process
        self._stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.pid = process.pid

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    def send_signal(self, signum: int) -> None:
        self._process.send_signal(signum)

    def terminate(self) -> None:
        self._process.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self._process.kill()

    async def wait(self) -> int:
        return await self._process.wait()

    async def communicate(self, input: bytes = b"") -> tuple[bytes, bytes]:
        if self._stdin is not None:
            with contextlib.suppress(BrokenPipeError):  # the command ended without reading it, as asyncio allows
                os.write(self._stdin, input)
            os.close(self._stdin)
            self._stdin = None
        out, err = await asyncio.gather(_read_all(self.stdout), _read_all(self.stderr))
        await self.wait()
        return out, err


async def start(
    *args: str,
    env: Mapping[str, str] | None = None,
    stdin: bool = False,
    stdout: bool = True,
    input_size: int = 0,
) -> Process | ForkedCommand:
    """``kubelet-dra ARGS`` with ``env`` added to this environment; pipes for stdin (``stdin``), stdout
    (``stdout``) and stderr, /dev/null for those not asked for."""
    argv = [sys.executable, "-m", "kubelet_dra", *args]
    environment = {**os.environ, **(env or {})}
    if CLI_FORK_SERVER.forkable(argv, environment) and input_size < PIPE_HOLDS:
        with contextlib.suppress(OSError):  # no fork server: the command is exec'd below, as without one
            return await _fork(argv, environment, stdin=stdin, stdout=stdout)
    pipe, devnull = asyncio.subprocess.PIPE, asyncio.subprocess.DEVNULL
    return await asyncio.create_subprocess_exec(
        *argv,
        stdin=pipe if stdin else devnull,
        stdout=pipe if stdout else devnull,
        stderr=pipe,
        env=environment,
    )


async def _fork(argv: Sequence[str], env: Mapping[str, str], *, stdin: bool, stdout: bool) -> ForkedCommand:
    devnull = os.open(os.devnull, os.O_RDWR)
    ours: list[int | None] = [None, None, None]
    theirs = [devnull, devnull, devnull]
    for index, wanted in enumerate((stdin, stdout, True)):
        if wanted:
            read, write = os.pipe()
            ours[index], theirs[index] = (write, read) if index == 0 else (read, write)
    try:
        process = await CLI_FORK_SERVER.spawn(argv, env, theirs)
    except BaseException:
        for fd in ours:
            if fd is not None:
                os.close(fd)
        raise
    finally:
        for fd in {*theirs}:
            os.close(fd)
    return ForkedCommand(process, ours[0], await _reader(ours[1]), await _reader(ours[2]))


async def _reader(fd: int | None) -> asyncio.StreamReader | None:
    if fd is None:
        return None
    reader = asyncio.StreamReader(limit=1 << 20)
    pipe = os.fdopen(fd, "rb", buffering=0)
    await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
    return reader


async def _read_all(reader: asyncio.StreamReader | None) -> bytes:
    return await reader.read() if reader is not None else b""
