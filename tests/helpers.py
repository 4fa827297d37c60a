"""Test helpers shared by the test folders: waiting for conditions and driving kubelet-dra processes."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import forkedcli

from kubelet_dra.workbench.testbed.machineload import load_factor

KEPT_WORKDIR = re.compile(r"/tmp/kd-[A-Za-z0-9_]+(?=/)")


def markdown_anchors(page: Path) -> set[str]:
    """The anchors of a page: those GitHub gives its headings (lower case, spaces to dashes, punctuation
    dropped) and those it sets itself (``<a id="...">``)."""
    text = page.read_text()
    headings = re.findall(r"^#+ (.+)$", text, flags=re.MULTILINE)
    named = re.findall(r'<a id="([^"]+)"></a>', text)
    return {re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-") for heading in headings} | set(named)


def remove_kept_workdirs(*outputs: str) -> list[str]:
    """Remove the work dirs a failed run kept and named in its output (a driver that failed at start: its log is
    there for the user); returns them, so that a test can also assert the user was told where."""
    kept = sorted({match for text in outputs for match in KEPT_WORKDIR.findall(text)})
    for directory in kept:
        shutil.rmtree(directory, ignore_errors=True)
    return kept


async def eventually(check: Callable[[], Any], timeout: float = 10.0, interval: float = 0.05) -> Any:
    """Await ``check()`` until it returns something truthy; the last value on timeout (for the assert). The timeout
    is for a quiet machine: it is scaled by the machine's load (``load_factor``), so a loaded one waits longer."""
    deadline = time.monotonic() + timeout * load_factor()
    while True:
        value = check()
        if asyncio.iscoroutine(value):
            value = await value
        if value or time.monotonic() > deadline:
            return value
        await asyncio.sleep(interval)


class KubeletDRAProcess:
    """A ``kubelet-dra`` subprocess whose stderr log lines are read all along (the pipe never fills) and awaited."""

    def __init__(self, proc: forkedcli.Process | forkedcli.ForkedCommand) -> None:
        self.proc = proc
        self.lines: list[str] = []
        self._new_line = asyncio.Event()
        self._reader = asyncio.create_task(self._read())

    @staticmethod
    async def spawn(*args: str, env: Mapping[str, str] | None = None) -> forkedcli.Process | forkedcli.ForkedCommand:
        """Start ``kubelet-dra ARGS``, with ``env`` added to this process's environment."""
        return await forkedcli.start(*args, env=env, stdout=False)

    @classmethod
    async def start(cls, *args: str, env: Mapping[str, str] | None = None) -> KubeletDRAProcess:
        return cls(await cls.spawn(*args, env=env))

    async def _read(self) -> None:
        assert self.proc.stderr is not None
        async for raw in self.proc.stderr:
            self.lines.append(raw.decode().rstrip("\n"))
            self._new_line.set()
        self._new_line.set()

    async def wait_line(self, pattern: str, timeout: float = 20.0) -> str:
        regex = re.compile(pattern)
        async with asyncio.timeout(timeout):
            while True:
                self._new_line.clear()
                if match := next((line for line in self.lines if regex.search(line)), None):
                    return match
                if self._reader.done():
                    raise AssertionError(f"process ended without logging {pattern!r}:\n" + "\n".join(self.lines))
                await self._new_line.wait()

    async def wait(self) -> int:
        """Wait for the process to end by itself; its exit code."""
        code = await asyncio.wait_for(self.proc.wait(), 20)
        await self._reader
        return code

    async def stop(self) -> int:
        if self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
        return await self.wait()


def kubelet_dra_each(*argvs: Sequence[str], timeout: float = 120) -> dict[tuple[str, ...], tuple[int, str, str]]:
    """``kubelet-dra ARGV`` for each command line, one after another in one fresh process (``clibatch.py``):
    (exit code, stdout, stderr) by command line, for cases that differ only in their flags."""
    done = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("clibatch.py"))],
        input=json.dumps([list(argv) for argv in argvs]),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    return {tuple(argv): (code, out, err) for argv, (code, out, err) in zip(argvs, results, strict=True)}


async def kubelet_dra(
    *args: str, stdin: str = "", timeout: float = 60, env: Mapping[str, str] | None = None
) -> tuple[int, str, str]:
    """Run ``kubelet-dra ARGS`` to the end (killed after ``timeout``), with ``env`` added to this process's environment;
    (exit code, stdout, stderr)."""
    process = await forkedcli.start(*args, env=env, stdin=True, input_size=len(stdin.encode()))
    try:
        out, err = await asyncio.wait_for(process.communicate(stdin.encode()), timeout=timeout)
    except TimeoutError:
        # a command that should have ended is not left running after the test: SIGTERM first, so that it stops
        # the processes it started (an API server holding the pipes would outlive a SIGKILL)
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 30)
        except TimeoutError:
            process.kill()
        raise
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def run_kubelet_dra(
    *args: str, env: Mapping[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``kubelet_dra`` for a test that is not a coroutine, answered as ``subprocess.run`` answers: the command is
    forked as the suite forks the others (``forkedcli``), not exec'd for half a second of imports."""
    code, out, err = asyncio.run(kubelet_dra(*args, timeout=timeout, env=env))
    return subprocess.CompletedProcess([sys.executable, "-m", "kubelet_dra", *args], code, out, err)
