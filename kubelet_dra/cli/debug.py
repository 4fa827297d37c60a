"""``kubelet-dra debug``: register the drivers of a registry dir like the kubelet, live, and say what is wrong.

A node engineer points it at the dir a driver registers in (a real node's
``/var/lib/kubelet/plugins_registry`` by default); a driver author at the dir their driver uses.
The view shows every registration socket and its phase, each driver instance and its gRPC
connection, other sockets on the machine (stale ones, registration sockets in the wrong dir), the
driver names the cluster uses but nobody registered, a timeline of handshakes, connections, wipes
and calls, and every problem with its failure mode and fix. With ``--kubeconfig`` (a real
cluster) it never deletes ResourceSlices and never creates the Node: wipes are only counted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import socket
import time

import attrs
from rich.live import Live
from rich.markup import escape

from kubelet_dra.cli import nodeflags, output
from kubelet_dra.cli.command import Command
from kubelet_dra.kubelet.kubelet import Node, NodeOptions
from kubelet_dra.peers.errors import UsageError
from kubelet_dra.peers.log import clock_time
from kubelet_dra.workbench.debug import DebugSession, Report, default_elsewhere, render
from kubelet_dra.workbench.debug.inventory import KUBELET_DIRS, KUBELET_REGISTRY_DIR
from kubelet_dra.workbench.debug.timeline import Event


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--registry-dir",
        default=KUBELET_REGISTRY_DIR,
        metavar="DIR",
        help="the plugin registry dir to watch (default: %(default)s, a default kubelet's)",
    )
    parser.add_argument(
        "--node-name", default=socket.gethostname(), metavar="NAME", help="the node's name (default: this host's)"
    )
    parser.add_argument(
        "--look-in",
        action="append",
        default=[],
        metavar="DIR",
        help=f"also list the sockets under DIR (repeatable; default: {', '.join(KUBELET_DIRS)}"
        " and the registry dir's parent)",
    )
    parser.add_argument(
        "--for",
        dest="duration",
        type=float,
        metavar="SECONDS",
        help="watch this long, then print the report and exit 0 (no problem) or 1 (problems);"
        " default: live until Ctrl-C",
    )
    nodeflags.add_arguments(parser)


def options(args: argparse.Namespace) -> NodeOptions:
    if args.duration is not None and args.duration <= 0:
        raise UsageError("the watch time must be positive", where="--for", fix="give a number of seconds")
    real_cluster = bool(args.kubeconfig or args.in_cluster)
    return attrs.evolve(nodeflags.node_options(args), dry_run_wipes=real_cluster, register_node=not real_cluster)


def run(args: argparse.Namespace) -> int:
    node_options = options(args)
    with output.quiet_logs(args.verbosity):
        report = asyncio.run(watch(args, node_options))
    if args.output == "json":
        output.print_json(report.to_json())
    else:
        output.console().print(render(report))
    return 1 if report.problems() else 0


async def watch(args: argparse.Namespace, node_options: NodeOptions) -> Report:
    """Run the node and its debug session until Ctrl-C, SIGTERM or ``--for``; the last report."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    deadline = time.monotonic() + args.duration if args.duration else float("inf")
    elsewhere = args.look_in or default_elsewhere(args.registry_dir)
    async with (
        nodeflags.api_server(args) as kubeconfig,
        Node(args.node_name, args.registry_dir, kubeconfig=kubeconfig, options=node_options) as node,
    ):
        assert node.kube is not None
        origin = "from --kubeconfig" if args.kubeconfig else "embedded; drivers use the kubeconfig"
        session = DebugSession(node, api_server=f"{node.kube.host} ({origin} {kubeconfig})", elsewhere=elsewhere)
        await session.scan()
        console = output.console()
        live = args.output == "text" and console.is_terminal
        streaming = args.output == "text" and not live
        view = Live(render(session.report()), console=console, transient=True) if live else None
        with view if view is not None else contextlib.nullcontext():
            _print_events(session.timeline.events, enabled=streaming)
            while not stop.is_set() and time.monotonic() < deadline:
                fresh = await session.update(min(0.5, max(0.0, deadline - time.monotonic())))
                if view is not None:
                    view.update(render(session.report()))
                _print_events(fresh, enabled=streaming)
        return session.report()


def _print_events(events: list[Event], *, enabled: bool) -> None:
    """Without a terminal (a pipe, a CI log) the timeline is streamed line by line instead of drawn live."""
    if not enabled:
        return
    console = output.console()
    for event in events:
        mark = "[red]✗[/red]" if event.problem else "·"
        console.print(f"{clock_time(event.at)} {mark} {escape(event.subject)}: {escape(event.text)}")


COMMAND = Command(
    name="debug",
    description=(
        "Watch a plugin registry dir and register every DRA driver that appears there, exactly as the"
        " kubelet would, showing live where each registration socket stands, each driver instance's gRPC"
        " connection, other sockets on the machine (stale ones, registration sockets in the wrong dir), driver"
        " names the cluster uses that nobody registered, a timeline, and every problem with its failure mode and"
        " fix. With --kubeconfig (a real cluster) ResourceSlices are never deleted: wipes are only counted."
        " Exit 0 when nothing is wrong at the end, 1 when a problem is left, 2 on a usage error."
    ),
    add_arguments=add_arguments,
    run=run,
)
