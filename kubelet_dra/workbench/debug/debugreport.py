"""Where the node stands, what is wrong with it and how to fix each thing: the debugger's one result.

A ``Report`` is data (``to_json`` for scripts); ``render`` turns it into the rich view people read,
live or once at the end. ``problems`` is the diagnosis: one line per thing a driver author or node
engineer has to act on, each with its failure mode (docs/protocol.md#failure-modes) and the fix.
"""

from __future__ import annotations

import os
import re
from typing import Any

import attrs
from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from kubelet_dra.kubelet.pluginmanager import FAILURE_MODES, SocketPhase, SocketState
from kubelet_dra.peers.log import clock_time
from kubelet_dra.workbench.debug.catalogue import mode_command, mode_link
from kubelet_dra.workbench.debug.drivernames import NameMismatch
from kubelet_dra.workbench.debug.inventory import FoundSocket, Liveness
from kubelet_dra.workbench.debug.timeline import Event, InstanceView

TIMELINE_LINES = 15


@attrs.frozen
class Problem:
    subject: str
    mode: str
    """The failure mode (``F1`` …, docs/kubelet-messages.md), or ``setup`` for a mistake in how the debugger was
    started."""
    text: str
    fix: str
    message: str = ""
    """The kubelet's own words: verbatim what it said, or the line the real kubelet logs for the case (F10)."""

    @property
    def link(self) -> str:
        """The mode's entry on the page of every kubelet DRA message; "" for a setup mistake."""
        return mode_link(self.mode) if self.mode.startswith("F") else ""

    def to_json(self) -> dict[str, str]:
        return {**attrs.asdict(self), "link": self.link}


@attrs.frozen
class Report:
    node: str
    registry_dir: str
    api_server: str
    wiping_delay: float
    dry_run_wipes: bool
    at: float
    sockets: tuple[SocketState, ...]
    instances: tuple[InstanceView, ...]
    wipes: dict[str, float]
    found: tuple[FoundSocket, ...]
    names: tuple[NameMismatch, ...]
    events: tuple[Event, ...]
    node_missing: bool = False
    """The API server has no Node of this name: wipes wait for it, and the name is probably wrong."""
    api_error: str = ""
    """Why the API server could not be read at the last look, "" when it could."""

    @property
    def endpoints(self) -> dict[str, str]:
        """Service socket path → the driver registered with it."""
        return {instance.endpoint: instance.driver for instance in self.instances}

    def problems(self) -> list[Problem]:
        known = {state.socket_path for state in self.sockets}
        return [
            *self._setup_problems(),
            *(p for state in self.sockets if (p := _socket_problem(state, self.at)) is not None),
            *(_connection_problem(i, self.wipes.get(i.driver), self.at) for i in self.instances if not i.connected),
            *(p for found in self.found if (p := self._found_problem(found, known)) is not None),
            *(
                Problem(n.driver, "F12", f"{n.used_by} names DRA driver {n.driver}, which is not registered", n.fix)
                for n in self.names
            ),
        ]

    def _setup_problems(self) -> list[Problem]:
        """What keeps every driver from working here: nothing to register, no API server, a wrong node name."""
        problems = []
        if not self.sockets:
            problems.append(
                Problem(
                    self.registry_dir,
                    "F1",
                    "no registration socket in the watched dir: no driver can register",
                    "start the driver with this dir as its registration dir (the kubeletplugin helper's"
                    " RegistrarDirectoryPath), or watch the dir it uses (--registry-dir)",
                )
            )
        if self.api_error:
            problems.append(
                Problem(
                    self.api_server,
                    "setup",
                    f"cannot read the API server: {self.api_error}",
                    "check --kubeconfig (drivers need the API server too: they publish ResourceSlices and read claims)",
                )
            )
        if self.node_missing:
            problems.append(
                Problem(
                    self.node,
                    "setup",
                    f"the API server has no Node {self.node}: ResourceSlice wipes wait for it, and drivers publish"
                    " for the node name they are given",
                    "pass --node-name as the cluster names this node (kubectl get nodes)",
                )
            )
        return problems

    def _found_problem(self, found: FoundSocket, known: set[str]) -> Problem | None:
        """A socket the node does not know about that a kubelet would trip over (or never see)."""
        if found.path in known or found.path in self.endpoints:
            return None
        name = os.path.basename(found.path)
        if found.in_registry and name.startswith("."):
            return Problem(
                found.path, "F1", "the name starts with '.', so the kubelet ignores the socket", FAILURE_MODES["F1"].fix
            )
        if found.in_registry:
            return Problem(
                found.path,
                "F1",
                "the socket is in the registry dir but was never seen created there"
                " (moved in, or a sub-directory the watcher skipped)",
                FAILURE_MODES["F1"].fix,
            )
        if looks_like_registration(name):
            return Problem(
                found.path,
                "F1",
                f"a registration socket outside the watched dir {self.registry_dir}: the kubelet never looks there",
                "create it in the kubelet's plugins_registry dir"
                " (check the kubelet's --root-dir and the driver's registrar path flag)",
            )
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "registryDir": self.registry_dir,
            "apiServer": self.api_server,
            "wipingDelay": self.wiping_delay,
            "dryRunWipes": self.dry_run_wipes,
            "at": self.at,
            "sockets": [_state_json(state) for state in self.sockets],
            "instances": [attrs.asdict(instance) for instance in self.instances],
            "pendingWipes": self.wipes,
            "foundSockets": [attrs.asdict(found) for found in self.found],
            "nameMismatches": [name.to_json() for name in self.names],
            "nodeMissing": self.node_missing,
            "apiError": self.api_error,
            "problems": [problem.to_json() for problem in self.problems()],
            "events": [event.to_json() for event in self.events],
        }


REGISTRATION_NAME = re.compile(r"(^|[-_.])reg(istration|istrar)?([-_.]|$)")


def looks_like_registration(name: str) -> bool:
    """``<driver>-reg.sock`` and its kin: the names drivers give their registration sockets."""
    return bool(REGISTRATION_NAME.search(name.removesuffix(".sock")))


def _socket_problem(state: SocketState, now: float) -> Problem | None:
    if state.phase is SocketPhase.REGISTERED or (state.phase is SocketPhase.IN_PROGRESS and not state.diagnosis):
        return None
    retry = f"; next attempt in {state.retry_at - now:.1f} s" if state.retry_at and state.retry_at > now else ""
    if state.diagnosis is not None:
        diagnosis = state.diagnosis
        text = f"{diagnosis.symptom}: {diagnosis.cause}{retry}"
        return Problem(state.socket_path, diagnosis.id, text, diagnosis.fix, diagnosis.message)
    if state.last_error:
        return Problem(
            state.socket_path, "F2", f"registration failed{retry}", FAILURE_MODES["F2"].fix, state.last_error
        )
    return None


def _connection_problem(instance: InstanceView, wipe_at: float | None, now: float) -> Problem:
    wipe = f"; its ResourceSlices are wiped in {max(0.0, wipe_at - now):.0f} s" if wipe_at is not None else ""
    text = f"registered, but its service connection is {instance.connectivity}{wipe}"
    dial_error = "connection refused" if os.path.exists(instance.endpoint) else "no such file or directory"
    kubelet_says = FAILURE_MODES["F10"].kubelet_says(endpoint=instance.endpoint, error=dial_error)
    return Problem(f"{instance.driver} {instance.endpoint}", "F10", text, FAILURE_MODES["F10"].fix, kubelet_says)


def _state_json(state: SocketState) -> dict[str, Any]:
    data = attrs.asdict(state, recurse=False)
    data["phase"] = state.phase.value
    data["diagnosis"] = attrs.asdict(state.diagnosis) if state.diagnosis else None
    return data


# --- rendering ---


def render(report: Report) -> Group:
    """The whole view: header, registration sockets, other sockets, problems with fixes, the timeline."""
    problems = report.problems()
    parts: list[Any] = [_header(report), _sockets_table(report)]
    others = _others_table(report)
    if others.row_count:
        parts.append(others)
    parts.append(_problems(problems))
    parts.append(_timeline(report.events[-TIMELINE_LINES:]))
    return Group(*parts)


def _header(report: Report) -> Text:
    wipes = "only counted (they are a real cluster's)" if report.dry_run_wipes else "deleted"
    return Text.from_markup(
        f"[bold]kubelet-dra debug[/bold]: node [bold]{escape(report.node)}[/bold], watching"
        f" [bold]{escape(report.registry_dir)}[/bold]\n"
        f"API server {escape(report.api_server)}\n"
        f"ResourceSlices: {wipes} at start and {report.wiping_delay:g} s after a driver loses its last connection"
    )


def _sockets_table(report: Report) -> Table:
    table = Table(title="Registration sockets", title_justify="left", expand=False)
    for column in ("socket", "state", "driver", "endpoint", "service", "connection"):
        table.add_column(column, overflow="fold")
    instances = {(i.driver, i.endpoint): i for i in report.instances}
    for state in report.sockets:
        instance = instances.get((state.name, state.endpoint))
        phase = state.phase.value
        if state.retry_at is not None and state.phase is SocketPhase.BACKOFF:
            phase += f" (retry in {max(0.0, state.retry_at - report.at):.1f} s)"
        color = "green" if state.phase is SocketPhase.REGISTERED else "red" if state.diagnosis else "yellow"
        table.add_row(
            escape(_short(state.socket_path, report.registry_dir)),
            f"[{color}]{escape(phase)}[/{color}]",
            escape(state.name),
            escape(state.endpoint),
            escape(instance.service if instance else ""),
            escape(instance.connectivity if instance else ""),
        )
    if not report.sockets:
        table.add_row("[dim]none yet: no socket in the registry dir[/dim]", "", "", "", "", "")
    return table


def _others_table(report: Report) -> Table:
    table = Table(title="Other sockets found", title_justify="left", expand=False)
    for column in ("socket", "listening", "what"):
        table.add_column(column, overflow="fold")
    known = {state.socket_path for state in report.sockets}
    endpoints = report.endpoints
    for found in report.found:
        if found.path in known:
            continue
        what = (
            f"service socket of {endpoints[found.path]}"
            if found.path in endpoints
            else "registration socket?"
            if looks_like_registration(os.path.basename(found.path))
            else ""
        )
        listening = found.liveness.value + (f" ({found.detail})" if found.detail else "")
        color = "green" if found.liveness is Liveness.LIVE else "red"
        table.add_row(escape(found.path), f"[{color}]{escape(listening)}[/{color}]", escape(what))
    return table


def _problems(problems: list[Problem]) -> Text:
    if not problems:
        return Text.from_markup("[green]No problem found[/green]: every driver registered and connected.")
    text = Text.from_markup(f"[bold red]{len(problems)} problem(s)[/bold red]\n")
    for problem in problems:
        text.append_text(Text.from_markup(f"[red]✗ {problem.mode}[/red] {escape(problem.subject)}: "))
        text.append(problem.text + "\n")
        if problem.message:
            text.append(f"    kubelet: {problem.message}\n", style="dim")
        text.append(f"    fix: {problem.fix}\n", style="cyan")
        if problem.link:
            text.append(f"    more: {mode_command(problem.mode)} · {problem.link}\n", style="dim")
    text.rstrip()
    return text


def _timeline(events: tuple[Event, ...]) -> Table:
    table = Table(title="Timeline", title_justify="left", expand=False, show_header=False, box=None)
    table.add_column("time", no_wrap=True, style="dim")
    table.add_column("subject", overflow="fold")
    table.add_column("event", overflow="fold")
    for event in events:
        stamp = clock_time(event.at)
        repeats = f" (×{event.repeats}, last {clock_time(event.last_at)})" if event.last_at is not None else ""
        text = f"[red]{escape(event.text)}[/red]" if event.problem else escape(event.text)
        table.add_row(stamp, escape(_subject(event.subject)), text + repeats)
    return table


def _subject(subject: str) -> str:
    """A socket path by its file name (the sockets table has the whole path); other subjects as they are."""
    return os.path.basename(subject) if subject.startswith("/") and " " not in subject else subject


def _short(path: str, registry_dir: str) -> str:
    relative = os.path.relpath(path, registry_dir)
    return path if relative.startswith("..") else relative
