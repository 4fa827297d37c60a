"""Run the embedded API server in a process of its own (``kubelet-dra apiserver``) and stop it with the caller.

A fleet of many nodes in one process shares one event loop and, in Python, one core: the API server inside
it competed with a thousand nodes' heartbeats, watches and pod syncs for the same loop, so answers slowed
down for everyone. In its own process it has a core and a loop of its own, as kube-apiserver has beside
real kubelets; the nodes reach it over the same HTTPS and kubeconfig either way.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path
from types import TracebackType

from kubelet_dra.peers.errors import KubeletDRAError
from kubelet_dra.peers.log import get_logger

START_TIMEOUT = 60.0
"""Seconds the server may take to serve and write its kubeconfig (a loaded machine's Python start included)."""
STOP_GRACE = 10.0
"""Seconds between SIGTERM and SIGKILL."""


class ServerProcess:
    """``async with ServerProcess(kubeconfig, listen=…) as server:`` the server serves, ``server.kubeconfig`` is its
    admin kubeconfig; leaving the block stops it. Its logs go to this process's stderr, at ``verbosity``."""

    def __init__(self, kubeconfig: Path, *, listen: str = "127.0.0.1:0", verbosity: int = 0) -> None:
        self.kubeconfig = kubeconfig.absolute()
        self.argv = [sys.executable, "-m", "kubelet_dra", "apiserver", "-v", str(verbosity), "--output", "json"]
        self.argv += ["--listen", listen, "--kubeconfig-out", str(self.kubeconfig)]
        self.url = ""
        self._process: asyncio.subprocess.Process | None = None
        self._log = get_logger("apiserver")

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    async def __aenter__(self) -> ServerProcess:
        self._process = await asyncio.create_subprocess_exec(
            *self.argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, start_new_session=True
        )
        try:
            self.url = await asyncio.wait_for(self._announced(), START_TIMEOUT)
        except TimeoutError:
            self.url = ""
        if not self.url:
            await self._stop()
            raise KubeletDRAError(
                f"the API server process did not start (exit code {self._process.returncode})",
                where=" ".join(self.argv[2:]),
                fix="see its error above; is --listen's address free?",
            )
        self._log.info("API server process ready", pid=self._process.pid, url=self.url, kubeconfig=str(self.kubeconfig))
        return self

    async def _announced(self) -> str:
        """The URL of the JSON document the server prints once it serves ("" if it exits first)."""
        assert self._process is not None and self._process.stdout is not None
        document = b""
        while line := await self._process.stdout.readline():
            document += line
            if line.rstrip() == b"}":  # the document's last line: it is printed indented
                try:
                    return str(json.loads(document)["url"])
                except (ValueError, KeyError):
                    return ""
        return ""

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self._stop()

    async def _stop(self) -> None:
        process = self._process
        if process is None or process.returncode is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), STOP_GRACE)
        except TimeoutError:
            process.kill()
            await process.wait()
        self._log.info("API server process stopped", pid=process.pid, exitCode=process.returncode)
