"""Reference driver starts by fork: the owner's side of :mod:`kubelet_dra.workbench.testbed.forkserver`.

With ``KUBELET_DRA_FORK_DRIVERS=1`` in the environment, the testbed starts ``python -m kubelet_dra
driver`` by asking a fork server that has imported it once, skipping the quarter second of CPU an
``exec`` pays in imports: the unit suite starts the reference driver about 500 times. A driver
started this way is a real process with its own pid, sockets and session, signalled through a pidfd
and reaped by the fork server, which reports its exit code; ``ps`` shows the fork server's command
line for it, which is why it is not the default. Only that command line is forked, and only when
the environment agrees with the server's on everything read before ``main`` runs (``PYTHON*``,
``GRPC_*``, ``COVERAGE_*``); anything else, and any platform without pidfds, is exec'd.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence

from kubelet_dra.peers.log import get_logger
from kubelet_dra.workbench.testbed import forkserver

ENVIRONMENT_READ_AT_IMPORT = ("PYTHON", "GRPC_", "COVERAGE_")
"""Variables a preloaded module or the interpreter may have read before the fork: a start that sets
them differently is exec'd."""
ENABLE = "KUBELET_DRA_FORK_DRIVERS"
"""The environment variable that turns forking on (``1``)."""
AVAILABLE = hasattr(os, "pidfd_open") and hasattr(socket, "send_fds") and hasattr(signal, "pidfd_send_signal")

_log = get_logger("testbed")


class ForkedProcess:
    """A forked driver, with the parts of ``asyncio.subprocess.Process`` the testbed uses."""

    def __init__(self, pid: int, pidfd: int, answer: socket.socket) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._pidfd = pidfd
        self._answer = answer
        self._loop = asyncio.get_running_loop()
        self._exited: asyncio.Future[int] = self._loop.create_future()
        self._loop.add_reader(answer.fileno(), self._on_answer)

    def send_signal(self, signum: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):  # exited; its code is on the way
                signal.pidfd_send_signal(self._pidfd, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    async def wait(self) -> int:
        return await asyncio.shield(self._exited)

    def _on_answer(self) -> None:
        try:
            message = self._answer.recv(256)
        except BlockingIOError:
            return
        self._loop.remove_reader(self._answer.fileno())
        self._answer.close()
        if message:
            self._exit(int(json.loads(message)["exit"]))
        else:  # the fork server died first: the code is lost, the exit still shows on the pidfd
            self._loop.add_reader(self._pidfd, self._on_lost)

    def _on_lost(self) -> None:
        self._loop.remove_reader(self._pidfd)
        self._exit(-1)

    def _exit(self, code: int) -> None:
        self.returncode = code
        os.close(self._pidfd)
        if not self._exited.done():
            self._exited.set_result(code)


class ForkServer:
    """This process's fork server, started at the first fork and gone when this process is."""

    def __init__(self, preload: Sequence[str], commands: frozenset[str] | None) -> None:
        self.preload = tuple(preload)
        """The modules the server imports before its first fork."""
        self.commands = commands
        """The ``kubelet_dra`` commands it forks; ``None``: any."""
        self._lock = threading.Lock()
        self._server: subprocess.Popen[bytes] | None = None
        self._control: socket.socket | None = None
        self._environment: dict[str, str] = {}
        atexit.register(self._close)

    def forkable(self, argv: Sequence[str], env: Mapping[str, str]) -> bool:
        """Whether ``argv`` is one of this server's commands on this Python, in an environment it can give."""
        if not AVAILABLE or env.get(ENABLE) != "1" or list(argv[:3]) != [sys.executable, "-m", "kubelet_dra"]:
            return False
        if self.commands is not None and (len(argv) < 4 or argv[3] not in self.commands):
            return False
        server_env = self._environment if self._server is not None else dict(os.environ)
        return all(
            env.get(name) == server_env.get(name)
            for name in {*env, *server_env}
            if name.startswith(ENVIRONMENT_READ_AT_IMPORT)
        )

    async def spawn(self, argv: Sequence[str], env: Mapping[str, str], stdio: Sequence[int]) -> ForkedProcess:
        """Fork ``argv`` with the descriptors ``stdio`` as its stdin, stdout and stderr; OSError: no server."""
        control = self._running()
        ours, theirs = socket.socketpair()
        try:
            request = {"argv": list(argv), "env": dict(env), "cwd": os.getcwd()}
            socket.send_fds(control, [json.dumps(request).encode()], [theirs.fileno(), *stdio])
        finally:
            theirs.close()
        ours.setblocking(False)
        try:
            await _readable(ours.fileno())
            message, fds, _flags, _address = socket.recv_fds(ours, 256, 1)
        except BaseException:
            ours.close()
            raise
        if not message or not fds:
            ours.close()
            raise ConnectionError("the fork server closed without starting the driver")
        return ForkedProcess(int(json.loads(message)["pid"]), fds[0], ours)

    def _running(self) -> socket.socket:
        with self._lock:
            if self._server is None or self._server.poll() is not None or self._control is None:
                ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                self._server = subprocess.Popen(
                    [sys.executable, "-m", forkserver.__name__, str(theirs.fileno()), *self.preload],
                    pass_fds=[theirs.fileno()],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
                theirs.close()
                self._control = ours
                self._environment = dict(os.environ)
                _log.v(2).info("Fork server started", pid=self._server.pid)
            return self._control

    def _close(self) -> None:
        """At exit: the server sees its pair close and exits; drivers still running run on."""
        with self._lock:
            if self._control is not None:
                self._control.close()
                self._control = None
            if self._server is not None:
                try:
                    self._server.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._server.kill()


async def _readable(fd: int) -> None:
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    loop.add_reader(fd, lambda: ready.done() or ready.set_result(None))
    try:
        await ready
    finally:
        loop.remove_reader(fd)


DRIVER_FORK_SERVER = ForkServer(
    ("kubelet_dra.cli", "kubelet_dra.cli.driver", "kubelet_dra.peers.driver.plugin", "kubelet_dra.peers.driver.many"),
    frozenset({"driver"}),
)
"""The testbed's: what a reference driver start imports, imported once."""
