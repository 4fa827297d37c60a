"""The fork server: a Python that has imported ``kubelet_dra`` once and forks a fresh process per start.

Starting ``python -m kubelet_dra driver`` costs about a quarter of a second of CPU, nearly all of it
imports; a replay or a conformance run restarts the driver many times. This process is started by
:mod:`kubelet_dra.workbench.testbed.forked` with one end of a socket pair and the modules to import
(the driver's, or for a test suite every command's); each request on it brings
the command line, the environment and the working directory, with four descriptors: the socket to
answer on, stdin, stdout and stderr. The server forks; the child becomes what ``exec`` would have
made (a new session, those descriptors as 0, 1 and 2, that environment and directory) and runs
``kubelet_dra``'s ``main`` with the command line's arguments. The server answers with the child's
pid and a pidfd (so the owner signals exactly that process), then with its exit code, reaped here
since the server is its parent. The server is single-threaded and starts no thread, so forking it
is safe; it exits when its owner closes the pair, leaving running children to run on, as an
owner's exit leaves exec'd ones.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import importlib.util
import io
import json
import os
import runpy
import selectors
import signal
import socket
import sys
import traceback
from collections.abc import Sequence

MAIN_FILE = str(getattr(importlib.util.find_spec("kubelet_dra.__main__"), "origin", "kubelet_dra"))
"""``sys.argv[0]`` of ``python -m kubelet_dra``."""
MAX_REQUEST = 1 << 20
REQUEST_FDS = 4


def serve(control: socket.socket) -> None:
    """Answer start requests until the owner closes ``control``."""
    wake_read, wake_write = os.pipe()
    for fd in (wake_read, wake_write):
        os.set_blocking(fd, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    selector = selectors.DefaultSelector()
    selector.register(control, selectors.EVENT_READ)
    selector.register(wake_read, selectors.EVENT_READ)
    answers: dict[int, socket.socket] = {}
    inherited = [control.fileno(), wake_read, wake_write, selector.fileno()]
    while True:
        for key, _ in selector.select():
            if key.fileobj is wake_read:
                _drain(wake_read)
                _reap(answers)
                continue
            message, fds, _flags, _address = socket.recv_fds(control, MAX_REQUEST, REQUEST_FDS)
            if not message:
                return
            answer = socket.socket(fileno=fds[0])
            pid = os.fork()
            if pid == 0:
                try:
                    _become(json.loads(message), fds[1:], [*inherited, *(a.fileno() for a in answers.values())])
                finally:
                    os._exit(1)  # the child never returns into the server's loop
            for fd in fds[1:]:
                os.close(fd)
            pidfd = os.pidfd_open(pid)
            socket.send_fds(answer, [json.dumps({"pid": pid}).encode()], [pidfd])
            os.close(pidfd)
            answers[pid] = answer


def _drain(fd: int) -> None:
    """Empty the signal wake-up pipe (non-blocking: it ends at BlockingIOError)."""
    with contextlib.suppress(BlockingIOError):
        while os.read(fd, 512):
            continue


def _reap(answers: dict[int, socket.socket]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        answer = answers.pop(pid, None)
        if answer is None:
            continue
        with contextlib.suppress(OSError):  # the owner is gone: nobody waits for this code
            answer.sendall(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode())
        answer.close()


def _become(request: dict[str, object], stdio: Sequence[int], inherited: Sequence[int]) -> None:
    """In the child: what exec would have made of the request, then its ``main``; never returns."""
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    for fd in inherited:
        os.close(fd)
    os.setsid()
    for target, fd in enumerate(stdio):
        os.dup2(fd, target)
        os.close(fd)
    argv = [str(word) for word in request["argv"]]  # type: ignore[attr-defined]
    os.chdir(str(request["cwd"]))
    os.environ.clear()
    os.environ.update({str(k): str(v) for k, v in request["env"].items()})  # type: ignore[attr-defined]
    _standard_streams(unbuffered=bool(os.environ.get("PYTHONUNBUFFERED")))
    sys.argv = [MAIN_FILE, *argv[3:]]  # as -m makes it, and as it stays after runpy restores its own
    os._exit(_run())


def _standard_streams(*, unbuffered: bool) -> None:
    """sys.stdin, stdout and stderr on descriptors 0-2, buffered as the interpreter buffers them."""
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the process's own streams, open until it exits
    if unbuffered:
        sys.stdout = io.TextIOWrapper(open(1, "wb", buffering=0, closefd=False), write_through=True)  # noqa: SIM115
        sys.stderr = io.TextIOWrapper(
            open(2, "wb", buffering=0, closefd=False),  # noqa: SIM115
            errors="backslashreplace",
            write_through=True,
        )
    else:
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", errors="backslashreplace", buffering=1, closefd=False)  # noqa: SIM115


def _run() -> int:
    """``python -m kubelet_dra`` from here on: its exit code, atexit handlers run and output flushed."""
    try:
        runpy.run_module("kubelet_dra", run_name="__main__", alter_sys=True)
        code: object = 0
    except SystemExit as exit_:
        code = exit_.code
    except BaseException:
        traceback.print_exc()
        code = 1
    if code is not None and not isinstance(code, int):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError):
            stream.flush()
    return code or 0


def main() -> None:
    """``forkserver FD MODULE...``: import the modules, then serve on the socket ``FD``."""
    control = socket.socket(fileno=int(sys.argv[1]))
    for module in sys.argv[2:]:
        importlib.import_module(module)
    serve(control)


if __name__ == "__main__":
    main()
