"""Driver processes: any DRA driver started from a command line template, stopped, killed and restarted.

The suites treat every driver alike, the bundled reference driver included: a command line with
placeholders that the testbed fills in (``{node}``, ``{kubeconfig}``, ``{registry_dir}``,
``{plugin_dir}``, ``{plugins_root}``, ``{cdi_root}``, ``{driver}``, ``{python}``). ``{plugins_root}``
is the kubelet's plugins directory for drivers on the kubeletplugin helper, which serve
``<root>/<driver>/dra.sock``. The reference driver also listens on a control socket in its plugin
dir; ``faults``/``health``/``status`` speak to it there. A driver ``proxied`` has its wire knobs carried out by a
proxy between it and the node (``kubelet_dra.workbench.testbed.proxied``), whatever driver it is.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import string
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from kubelet_dra.peers.driver import control
from kubelet_dra.peers.driver.configfile import driver_name_problem
from kubelet_dra.peers.driver.settings import CONTROL_SOCKET
from kubelet_dra.peers.errors import UsageError
from kubelet_dra.peers.log import get_logger
from kubelet_dra.workbench.testbed.forked import DRIVER_FORK_SERVER, ForkedProcess
from kubelet_dra.workbench.testbed.proxied import DriverProxy

PLACEHOLDERS: tuple[str, ...] = (
    "node",
    "kubeconfig",
    "registry_dir",
    "plugin_dir",
    "plugins_root",
    "cdi_root",
    "driver",
    "python",
)
REFERENCE_DRIVER = (
    "{python} -m kubelet_dra driver --driver-name {driver} --node-name {node} --kubeconfig {kubeconfig}"
    " --registry-dir {registry_dir} --plugin-dir {plugin_dir} --cdi-root {cdi_root}"
)
"""The bundled reference driver as a command template; flags (devices, fault knobs) are appended."""
STOP_GRACE = 10.0
LOG_TAIL = 20


def placeholder_values(
    *,
    node: str,
    kubeconfig: Path,
    registry_dir: Path,
    plugin_dir: Path,
    plugins_root: Path,
    cdi_root: Path,
    driver: str,
) -> dict[str, str]:
    """What each placeholder of a driver command stands for on one node (``driver`` may be "")."""
    return {
        "node": node,
        "kubeconfig": str(kubeconfig),
        "registry_dir": str(registry_dir),
        "plugin_dir": str(plugin_dir),
        "plugins_root": str(plugins_root),
        "cdi_root": str(cdi_root),
        "driver": driver,
        "python": sys.executable,
    }


def placeholder_problem(word: str) -> str | None:
    """What is wrong with the placeholders of one word of a driver command, or None: each is a bare known name."""
    try:
        fields = [
            (name, spec, conversion) for _, name, spec, conversion in string.Formatter().parse(word) if name is not None
        ]
    except ValueError as err:
        return f"bad placeholder syntax in {word!r}: {err} (double braces for a literal brace)"
    for name, spec, conversion in fields:
        if name not in PLACEHOLDERS:
            return f"unknown placeholder {{{name}}}"
        if spec or conversion:
            written = f"{{{name}{'!' + conversion if conversion else ''}{':' + spec if spec else ''}}}"
            return f"placeholder {written} takes no conversion or format, write {{{name}}}"
    return None


def command_words(template: str, values: Mapping[str, str], *, where: str) -> list[str]:
    """The argv of ``template`` with its placeholders filled in; a malformed template is a usage error."""
    try:
        template.encode()
    except UnicodeEncodeError:
        raise UsageError(
            "the driver command is not UTF-8 text",
            where=where,
            fix="write it in UTF-8 (e.g. a UTF-8 symlink to a path)",
        ) from None
    try:
        # a command pasted from a shell script keeps its line continuations when quoted: they are spaces
        words = shlex.split(template.replace("\\\n", " "))
    except ValueError as err:
        raise UsageError(f"cannot split the driver command: {err}", where=where, fix="balance the quotes") from err
    if not words:
        raise UsageError("the driver command is empty", where=where, fix="give the command that starts the driver")
    for word in words:
        if problem := placeholder_problem(word):
            raise UsageError(
                f"{problem} in the driver command",
                where=where,
                fix=f"use {', '.join('{' + p + '}' for p in PLACEHOLDERS)} (double braces for a literal brace)",
            )
    return [word.format_map(values) for word in words]


def _driver_name(_spec: object, _attribute: object, name: str | None) -> None:
    """A driver's name names its dirs and log in the work dir: one that is no DRA driver name could leave it."""
    if name is not None and (problem := driver_name_problem(name)):
        raise UsageError(problem, where="driver name", fix="use a lowercase DNS subdomain such as gpu.example.com")


@attrs.frozen
class DriverSpec:
    """How to run one driver: its name (``None``: learnt from GetInfo) and its command line template."""

    name: str | None = attrs.field(validator=_driver_name)
    command: str = REFERENCE_DRIVER
    extra_args: tuple[str, ...] = ()
    """Appended to the command: e.g. ``--devices 2 --fault-prepare-error boom`` for the reference driver."""
    env: Mapping[str, str] = attrs.field(factory=dict)
    label: str = ""
    """A short name for the plugin dir and log file; default: the first label of the driver name."""
    proxied: bool = False
    """Behind the fault proxy: the driver registers in a registry dir of its own, which the proxy mirrors into the
    node's; its fault knobs (``set_faults``) are the proxy's wire knobs."""
    wire_faults: Mapping[str, str] = attrs.field(factory=dict)
    """The proxy's knobs at each start of the driver (as ``--fault-*`` flags are the reference driver's)."""

    def __attrs_post_init__(self) -> None:
        if self.wire_faults and not self.proxied:
            raise UsageError(
                f"wire fault knobs ({', '.join(self.wire_faults)}) for a driver that is not proxied",
                fix="run the driver behind the fault proxy (proxied), or give the reference driver --fault-* flags",
            )

    @property
    def key(self) -> str:
        return self.label or (self.name or "driver").split(".")[0]


class DriverProcess:
    """One driver's process across starts; its stderr and stdout go to ``log_path`` (appended per start)."""

    def __init__(self, spec: DriverSpec, values: Mapping[str, str], plugin_dir: Path, log_path: Path) -> None:
        self.spec = spec
        self.plugin_dir = plugin_dir
        self.log_path = log_path
        self.argv = command_words(spec.command, values, where="driver command") + list(spec.extra_args)
        self.starts = 0
        self.proxy: DriverProxy | None = None
        """The fault proxy between this driver and the node (``spec.proxied``)."""
        self._process: asyncio.subprocess.Process | ForkedProcess | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Future[int | None] | None = None
        self._log = get_logger("testbed", driver=spec.key)

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def returncode(self) -> int | None:
        return self._process.returncode if self._process is not None else None

    async def start(self) -> None:
        if self.running:
            return
        self._loop = asyncio.get_running_loop()
        if self.proxy is not None:
            await self.proxy.start()
            await self.proxy.reset_faults(self.spec.wire_faults)
        self.plugin_dir.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(f"--- start {self.starts + 1}: {shlex.join(self.argv)}\n".encode())
            log.flush()
            env = {**os.environ, **self.spec.env}
            try:
                self._process = await self._forked(env, log.fileno()) or await asyncio.create_subprocess_exec(
                    *self.argv,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    env=env,
                    start_new_session=True,
                )
            except OSError as err:
                raise UsageError(
                    f"cannot start the driver: {err.strerror or err}",
                    where=self.argv[0],
                    fix="check the driver command (the program must exist and be executable)",
                ) from err
        self.starts += 1
        how = "forked" if isinstance(self._process, ForkedProcess) else "exec"
        self._log.info("Started driver", pid=self._process.pid, start=self.starts, how=how)

    async def _forked(self, env: Mapping[str, str], log: int) -> ForkedProcess | None:
        """The reference driver forked from the fork server (``forked``); ``None``: exec it."""
        if not DRIVER_FORK_SERVER.forkable(self.argv, env):
            return None
        devnull = os.open(os.devnull, os.O_RDONLY)
        try:
            return await DRIVER_FORK_SERVER.spawn(self.argv, env, (devnull, log, log))
        except OSError as err:
            self._log.warning("Fork server unavailable; starting the driver with exec", err=str(err))
            return None
        finally:
            os.close(devnull)

    async def stop(self, grace: float = STOP_GRACE) -> int | None:
        """SIGTERM, as a DaemonSet pod is stopped; SIGKILL after ``grace`` seconds. The exit code."""
        if not self.running:
            return self.returncode
        return await self._signal(signal.SIGTERM, grace)

    def stop_soon(self) -> None:
        """Stop the driver on the loop that started it, from any thread (the proxy's exit-after-registration)."""
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._stop_in_background)

    def _stop_in_background(self) -> None:
        self._stopping = asyncio.ensure_future(self.stop())

    async def close(self) -> None:
        """Stop the driver and its proxy: the testbed is done with it."""
        await self.stop()
        if self.proxy is not None:
            await self.proxy.stop()

    async def kill(self) -> int | None:
        """SIGKILL: a crash, which leaves the sockets behind."""
        if not self.running:
            return self.returncode
        return await self._signal(signal.SIGKILL, STOP_GRACE)

    async def restart(self, *, kill: bool = False) -> None:
        await (self.kill() if kill else self.stop())
        await self.start()

    async def _signal(self, signum: int, grace: float) -> int | None:
        process = self._process
        assert process is not None
        process.send_signal(signum)
        try:
            await asyncio.wait_for(process.wait(), grace)
        except TimeoutError:
            self._log.warning("Driver ignored SIGTERM; killing it", grace=grace)
            process.kill()
            await process.wait()
        self._log.info("Driver stopped", signal=signal.Signals(signum).name, exitCode=process.returncode)
        return process.returncode

    def log_tail(self, lines: int = LOG_TAIL) -> str:
        """The last lines the driver wrote, for error messages and reports."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    # --- the reference driver's control socket; the proxy's knobs for a proxied driver ---

    async def control(self, message: dict[str, Any]) -> dict[str, Any]:
        return await control.request(self.plugin_dir / CONTROL_SOCKET, message)

    async def set_faults(self, knobs: Mapping[str, str]) -> dict[str, Any]:
        """Set fault knobs for the next calls; the knobs set now."""
        if self.proxy is not None:
            return await self.proxy.set_faults(knobs)
        return (await self.control({"op": "set", "knobs": dict(knobs)}))["knobs"]

    async def clear_faults(self, *names: str) -> dict[str, Any]:
        """Clear the named knobs (all without names); the knobs set now."""
        if self.proxy is not None:
            return await self.proxy.clear_faults(*names)
        return (await self.control({"op": "clear", "knobs": list(names)}))["knobs"]

    async def set_health(self, devices: Mapping[str, str], message: str = "") -> dict[str, Any]:
        return (await self.control({"op": "health", "devices": dict(devices), "message": message}))["health"]

    async def status(self) -> dict[str, Any]:
        """The reference driver's status; for a proxied driver, the knobs and held calls are the proxy's."""
        if self.proxy is None:
            return (await self.control({"op": "status"}))["status"]
        own = await self.control({"op": "status"}) if (self.plugin_dir / CONTROL_SOCKET).exists() else {}
        return {**own.get("status", {}), **await self.proxy.status()}
