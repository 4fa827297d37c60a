"""``kubelet-dra run``: one simulated node in the foreground, registering every driver that shows up.

Without ``--kubeconfig`` it starts the embedded API server and writes its admin kubeconfig, so
drivers can publish ResourceSlices to it; with ``--kubeconfig`` it uses that cluster. Every
registration, rejection, deregistration and wipe is logged as a key=value line in the kubelet's
words. Pods bound to the node (``spec.nodeName``) are run as far as DRA goes: claims prepared,
status Running, claims unprepared on deletion, then the deletion finished. The DRA manager's
checkpoint goes to ``--state-dir``, by default the registry dir's parent — where a kubelet keeps
``dra_manager_state`` next to ``plugins_registry`` (its root dir). With ``--metrics-port`` the
kubelet's DRA metrics are served at ``/metrics``. Ctrl-C or SIGTERM stops it cleanly.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from pathlib import Path

import attrs

from kubelet_dra.cli import nodeflags
from kubelet_dra.cli.command import Command
from kubelet_dra.errors import UsageError
from kubelet_dra.manager import DEFAULT_RECONCILE_PERIOD
from kubelet_dra.node import Node, NodeOptions
from kubelet_dra.pods import DEFAULT_RETRY_PERIOD
from kubelet_dra.scenarios.record import Recorder


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--node-name", required=True, metavar="NAME", help="the simulated node's name")
    parser.add_argument(
        "--registry-dir",
        required=True,
        metavar="DIR",
        help="plugin registry dir to watch for registration sockets (a kubelet's: /var/lib/kubelet/plugins_registry)",
    )
    nodeflags.add_arguments(parser)
    parser.add_argument(
        "--record-calls", metavar="FILE", help="append every gRPC call and stream to this JSON-lines file"
    )
    parser.add_argument(
        "--record",
        metavar="FILE",
        help="at stop, write what happened (drivers, pods, calls) as a scenario file for kubelet-dra replay",
    )
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="where the DRA manager's checkpoint dra_manager_state lives (default: the registry dir's parent,"
        " as a kubelet keeps it in its root dir next to plugins_registry)",
    )
    parser.add_argument(
        "--reconcile-period",
        type=float,
        default=DEFAULT_RECONCILE_PERIOD,
        metavar="SECONDS",
        help="how often claims of pods that are gone are unprepared (default: %(default)g)",
    )
    parser.add_argument(
        "--pod-retry-period",
        type=float,
        default=DEFAULT_RETRY_PERIOD,
        metavar="SECONDS",
        help="wait before retrying a failed prepare, unprepare or final delete of a pod, plus up to 50%% jitter"
        " (default: %(default)g, the kubelet's pod worker backoff)",
    )
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=0,
        metavar="PORT",
        help="serve the kubelet's DRA metrics (Prometheus text format) at http://ADDRESS:PORT/metrics"
        " (default: 0, not served)",
    )
    parser.add_argument(
        "--metrics-address",
        default="127.0.0.1",
        metavar="ADDRESS",
        help="address the metrics are served on (default: %(default)s)",
    )


def options(args: argparse.Namespace) -> NodeOptions:
    for flag, value in (("--reconcile-period", args.reconcile_period), ("--pod-retry-period", args.pod_retry_period)):
        if value <= 0:
            raise UsageError(
                f"{flag[2:].replace('-', ' ')} must be positive", where=flag, fix="give a number of seconds"
            )
    if not 0 <= args.metrics_port <= 65535:
        raise UsageError(
            f"metrics port {args.metrics_port} is out of range",
            where="--metrics-port",
            fix="give 1-65535, or 0 for off",
        )
    return attrs.evolve(
        nodeflags.node_options(args),
        record_calls=args.record_calls,
        state_dir=args.state_dir or str(Path(args.registry_dir).absolute().parent),
        reconcile_period=args.reconcile_period,
        pod_retry_period=args.pod_retry_period,
        metrics_port=args.metrics_port or None,
        metrics_address=args.metrics_address,
    )


def run(args: argparse.Namespace) -> int:
    asyncio.run(serve(args, options(args)))
    return 0


async def serve(args: argparse.Namespace, node_options: NodeOptions) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with (
        nodeflags.api_server(args) as kubeconfig,
        Node(args.node_name, args.registry_dir, kubeconfig=kubeconfig, options=node_options) as node,
        Recorder(node, args.record, kubeconfig=kubeconfig, registry_dir=args.registry_dir)
        if args.record
        else contextlib.nullcontext(),
    ):
        await stop.wait()


COMMAND = Command(
    name="run",
    help="run one simulated node: register DRA drivers from a registry dir, like the kubelet",
    description=(
        "Watch a plugin registry dir and register every DRA driver socket that appears, exactly as a v1.36"
        " kubelet would (handshake, service negotiation, instances, ResourceSlice wiping, health streams),"
        " logging each step, and run the pods bound to the node as far as DRA goes (prepare, status Running,"
        " unprepare on deletion), optionally serving the kubelet's DRA metrics. Runs until Ctrl-C or SIGTERM."
    ),
    add_arguments=add_arguments,
    run=run,
)
