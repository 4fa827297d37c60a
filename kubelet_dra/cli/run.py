"""``kubelet-dra run``: one simulated node in the foreground, registering every driver that shows up.

Without ``--kubeconfig`` it starts the embedded API server and writes its admin kubeconfig, so
drivers can publish ResourceSlices to it; with ``--kubeconfig`` it uses that cluster. Every
registration, rejection, deregistration and wipe is logged as a key=value line in the kubelet's
words. Pods bound to the node (``spec.nodeName``) are run as far as DRA goes: claims prepared,
status Running, claims unprepared on deletion, then the deletion finished. The DRA manager's
checkpoint goes to ``--state-dir``, by default the registry dir's parent — where a kubelet keeps
``dra_manager_state`` next to ``plugins_registry`` (its root dir). A state dir holding DRA state
kubelet-dra did not write (a kubelet's) is refused, and so is a registry dir under a kubelet's
``/var/lib/kubelet`` without ``--state-dir`` (``workbench/testbed/statedir``). With ``--metrics-port`` the
kubelet's DRA metrics are served at ``/metrics``. Ctrl-C or SIGTERM stops it cleanly.

With ``--nodes 'sim-{0..49}'`` it runs many nodes in this one process, each in its own dir under
``--root-dir`` (``--shard 1/4`` keeps the second of four slices of the names, for one of four processes);
``--driver-cmd`` starts one driver process per node, ``--reference-driver`` one reference driver process
per 500 nodes (each node with its own sockets, slices, CDI dir and knobs);
a table per node (drivers registered, pods, prepared claims, last error) shows how they fare.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import tempfile
from pathlib import Path

import attrs
from rich.live import Live

from kubelet_dra.cli import nodeflags, output
from kubelet_dra.cli.command import Command, raise_open_files_limit
from kubelet_dra.kubelet.cm.dra import DEFAULT_RECONCILE_PERIOD
from kubelet_dra.kubelet.kubelet import NodeOptions
from kubelet_dra.kubelet.pod_backoff import DEFAULT_BACK_OFF_PERIOD, PodSyncPeriods
from kubelet_dra.peers.api.calls import CALLS_KEPT
from kubelet_dra.peers.errors import UsageError, deprecated
from kubelet_dra.workbench.fleet import Fleet, NodeLayout, NodeRow, expand
from kubelet_dra.workbench.fleet import fleetview as view
from kubelet_dra.workbench.fleet.fleet import NODES_PER_DRIVER_PROCESS
from kubelet_dra.workbench.fleet.nodenames import check_node_name
from kubelet_dra.workbench.scenarios.record import Recorder
from kubelet_dra.workbench.testbed import PLACEHOLDERS, DriverSpec, command_words
from kubelet_dra.workbench.testbed.statedir import (
    KUBELET_ROOT_DIR,
    OWN_DIR,
    StateDirClaim,
    check_owned,
    in_kubelet_root,
)

REFRESH_PERIOD = 1.0
"""Seconds between looks at the nodes for the table (live) or the tally line (in a pipe)."""


RENAMED_FLAGS = {"--pod-retry-period": "--pod-back-off-period", "--pod-resync-period": "--sync-frequency"}
"""Flags of earlier versions, still taken with a warning: the old name → the kubelet's."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--node-name", metavar="NAME", help="the simulated node's name")
    which.add_argument(
        "--nodes",
        metavar="PATTERN",
        help="run many nodes in this process, named by a shell-like pattern: 'sim-{0..49}', 'gpu-{a,b}', 'n1,n2';"
        " a {node} in --kubeconfig gives each node its own credentials (e.g. kubeconfig-node-{node})",
    )
    parser.add_argument(
        "--shard",
        metavar="INDEX/COUNT",
        help="with --nodes, run only shard INDEX (from 0) of COUNT contiguous slices of the names, so COUNT processes"
        " or pods given the same pattern run each node once (e.g. 1/4)",
    )
    parser.add_argument(
        "--registry-dir",
        metavar="DIR",
        help="plugin registry dir to watch for registration sockets (a kubelet's: /var/lib/kubelet/plugins_registry;"
        " default: <root-dir>/<node>/plugins_registry)",
    )
    parser.add_argument(
        "--root-dir",
        metavar="DIR",
        help="each node's dir goes below it: <root-dir>/<node>/ holds plugins_registry, plugins, cdi and the"
        " checkpoint, as a kubelet's root dir does (default: a new dir in /tmp, kept)",
    )
    drivers = parser.add_mutually_exclusive_group()
    drivers.add_argument(
        "--driver-cmd",
        metavar="COMMAND",
        help="start this driver once per node, its placeholders filled in for that node: "
        + ", ".join("{" + p + "}" for p in PLACEHOLDERS),
    )
    drivers.add_argument(
        "--reference-driver",
        metavar="DRIVER_NAME",
        help="start the bundled reference driver, named DRIVER_NAME, on every node: one process serves up to"
        f" {NODES_PER_DRIVER_PROCESS} nodes, each node with its own sockets, slices, CDI dir and fault knobs",
    )
    parser.add_argument(
        "--devices",
        type=int,
        metavar="N",
        help="devices the reference driver publishes on each node (default: the driver's, 8)",
    )
    parser.add_argument(
        "--driver-name", metavar="NAME", help="the name --driver-cmd's {driver} stands for (default: empty)"
    )
    nodeflags.add_arguments(parser)
    parser.add_argument(
        "--apiserver-process",
        action=argparse.BooleanOptionalAction,
        help="run the embedded API server in a process of its own, with a core of its own, instead of on the"
        " nodes' event loop (default: with --nodes)",
    )
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
        " as a kubelet keeps it in its root dir next to plugins_registry); a dir with DRA state kubelet-dra did not"
        f" write is refused, and under {KUBELET_ROOT_DIR} it must be given",
    )
    parser.add_argument(
        "--reconcile-period",
        type=float,
        default=DEFAULT_RECONCILE_PERIOD,
        metavar="SECONDS",
        help="how often claims of pods that are gone are unprepared (default: %(default)g)",
    )
    parser.add_argument(
        "--pod-back-off-period",
        type=float,
        metavar="SECONDS",
        help="wait before retrying a failed unprepare, final status or final delete of a pod, plus up to 50%%"
        f" jitter (default: {DEFAULT_BACK_OFF_PERIOD:g}, the kubelet's pod worker backOffPeriod)",
    )
    parser.add_argument(
        "--sync-frequency",
        type=float,
        metavar="SECONDS",
        help="wait before syncing a pod again, e.g. retrying a failed prepare, plus up to 50%% jitter"
        " (default: six --pod-back-off-period, 60 s, as the kubelet's --sync-frequency)",
    )
    for old in RENAMED_FLAGS:
        parser.add_argument(old, type=float, metavar="SECONDS", help=argparse.SUPPRESS)
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
    for old, new in RENAMED_FLAGS.items():
        if (value := getattr(args, _dest(old))) is not None:
            deprecated(old, new)
            if getattr(args, _dest(new)) is None:
                setattr(args, _dest(new), value)
    periods = (
        ("--reconcile-period", args.reconcile_period),
        ("--pod-back-off-period", args.pod_back_off_period),
        ("--sync-frequency", args.sync_frequency),
    )
    for flag, value in periods:
        if value is not None and value <= 0:
            raise UsageError(
                f"{flag[2:].replace('-', ' ')} must be positive", where=flag, fix="give a number of seconds"
            )
    if not 0 <= args.metrics_port <= 65535:
        raise UsageError(
            f"metrics port {args.metrics_port} is out of range",
            where="--metrics-port",
            fix="give 1-65535, or 0 for off",
        )
    if args.node_name is not None:
        check_node_name(args.node_name, where="--node-name")
    if args.shard is not None and args.nodes is None:
        raise UsageError(
            "--shard splits the names of --nodes", where="--shard", fix="give --nodes too, or leave --shard out"
        )
    if args.apiserver_process and (args.kubeconfig or args.in_cluster):
        raise UsageError(
            "--apiserver-process starts the embedded API server, and --kubeconfig or --in-cluster names another",
            where="--apiserver-process",
            fix="leave it out",
        )
    if args.nodes is not None:
        one_node = {
            "--registry-dir": args.registry_dir,
            "--state-dir": args.state_dir,
            "--record": args.record,
            "--record-calls": args.record_calls,
            "--metrics-port": args.metrics_port,
        }
        for flag, value in one_node.items():
            if value:
                raise UsageError(
                    f"{flag} belongs to one node, and --nodes runs many",
                    where=flag,
                    fix="leave it out (each node has its own dirs under --root-dir), or run one node with --node-name",
                )
    return attrs.evolve(
        nodeflags.node_options(args),
        record_calls=args.record_calls,
        calls_kept=None if args.record else CALLS_KEPT,  # --record counts every call: it keeps them all
        reconcile_period=args.reconcile_period,
        pod_sync=_pod_sync(args),
        metrics_port=args.metrics_port or None,
        metrics_address=args.metrics_address,
    )


def _pod_sync(args: argparse.Namespace) -> PodSyncPeriods:
    back_off = args.pod_back_off_period or DEFAULT_BACK_OFF_PERIOD
    if args.sync_frequency is None:
        return PodSyncPeriods(back_off_period=back_off)
    return PodSyncPeriods(back_off_period=back_off, sync_frequency=args.sync_frequency)


def _dest(flag: str) -> str:
    return flag[2:].replace("-", "_")


def driver(args: argparse.Namespace) -> DriverSpec | None:
    """The driver each node gets, its command checked now rather than at the fiftieth start."""
    if args.reference_driver:
        if args.driver_name:
            raise UsageError(
                "--driver-name names the driver of --driver-cmd", where="--driver-name", fix="leave it out"
            )
        if args.devices is not None and args.devices < 0:
            raise UsageError(f"cannot have {args.devices} devices", where="--devices", fix="pass 0 or more")
        extra = ("--devices", str(args.devices)) if args.devices is not None else ()
        return DriverSpec(args.reference_driver, extra_args=extra)
    if args.devices is not None:
        raise UsageError(
            "--devices is the reference driver's", where="--devices", fix="give --reference-driver, or leave it out"
        )
    if args.driver_cmd is not None:
        command_words(args.driver_cmd, dict.fromkeys(PLACEHOLDERS, ""), where="--driver-cmd")
        return DriverSpec(args.driver_name, command=args.driver_cmd, label="driver")
    if args.driver_name:
        raise UsageError(
            "--driver-name without a driver to start",
            where="--driver-name",
            fix="give --driver-cmd too, or leave it out",
        )
    return None


def layouts(args: argparse.Namespace) -> list[NodeLayout]:
    """Each node's dirs: the given registry (and state) dir for one node, else one dir per node under the root."""
    if args.nodes is None and args.registry_dir:
        registry = Path(args.registry_dir).absolute()
        if not args.state_dir and in_kubelet_root(registry.parent):
            raise UsageError(
                f"the registry dir {registry} is a kubelet's, and so would be the state dir {registry.parent}",
                where="--registry-dir",
                fix=OWN_DIR,
            )
        root = Path(args.state_dir).absolute() if args.state_dir else registry.parent
        return [NodeLayout(args.node_name, root, registry)]
    names = expand(args.nodes, args.shard) if args.nodes is not None else [args.node_name]
    root_dir = Path(args.root_dir) if args.root_dir else Path(tempfile.mkdtemp(prefix="kubelet-dra-nodes-", dir="/tmp"))
    return [NodeLayout.under(root_dir, name) for name in names]


def claims(args: argparse.Namespace, nodes: list[NodeLayout]) -> contextlib.ExitStack:
    """Every node's state dir, owned (``workbench/testbed/statedir``) before anything starts and while the nodes
    run: one holding DRA state kubelet-dra did not write, or in use by another node, is refused."""
    if args.registry_dir:
        where, fix = ("--state-dir" if args.state_dir else "--registry-dir"), OWN_DIR
    else:
        where, fix = "--root-dir", "give a --root-dir of kubelet-dra's own (a new or empty dir)"
    for layout in nodes:  # all checked before any is marked: a refused run writes nothing
        check_owned(layout.root, where=where, fix=fix)
    stack = contextlib.ExitStack()
    with stack:
        for layout in nodes:
            stack.enter_context(StateDirClaim(layout.root, where=where, fix=fix))
        return stack.pop_all()


def run(args: argparse.Namespace) -> int:
    node_options, spec = options(args), driver(args)
    nodes = layouts(args)
    if args.nodes is None:
        with claims(args, nodes):
            asyncio.run(serve_one(args, node_options, nodes[0], spec))
        return 0
    raise_open_files_limit()
    live = args.output == "text" and output.console().is_terminal
    with claims(args, nodes), output.quiet_logs(args.verbosity) if live else contextlib.nullcontext():
        rows = asyncio.run(serve_many(args, node_options, nodes, spec, live=live))
    if args.output == "json":
        output.print_json([attrs.asdict(row) for row in rows])
    else:
        output.console().print(view.table(rows))
    return 0


def _stop_on_signals() -> asyncio.Event:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    return stop


async def serve_one(
    args: argparse.Namespace, node_options: NodeOptions, layout: NodeLayout, spec: DriverSpec | None
) -> None:
    stop = _stop_on_signals()
    async with (
        nodeflags.api_server(args, own_process=bool(args.apiserver_process)) as kubeconfig,
        Fleet([layout], kubeconfig=kubeconfig, options=node_options, driver=spec) as fleet,
        Recorder(fleet.nodes[0], args.record, kubeconfig=kubeconfig, registry_dir=str(layout.registry_dir))
        if args.record
        else contextlib.nullcontext(),
    ):
        await stop.wait()


async def serve_many(
    args: argparse.Namespace,
    node_options: NodeOptions,
    nodes: list[NodeLayout],
    spec: DriverSpec | None,
    *,
    live: bool,
) -> list[NodeRow]:
    """Run the nodes until a signal; the rows as they were at the end."""
    stop = _stop_on_signals()
    console = output.console()
    async with (
        nodeflags.api_server(args, own_process=args.apiserver_process is not False) as kubeconfig,
        Fleet(nodes, kubeconfig=kubeconfig, options=node_options, driver=spec) as fleet,
    ):
        tallies = not live and args.output == "text"  # JSON output is the final document alone
        if tallies:
            console.print(f"{len(nodes)} nodes under {nodes[0].root.parent}, API server kubeconfig {kubeconfig}")
        screen = Live(view.table(fleet.rows()), console=console, refresh_per_second=2) if live else None
        with screen or contextlib.nullcontext():
            shown = ""
            while not stop.is_set():
                rows = fleet.rows()
                if screen is not None:
                    screen.update(view.table(rows))
                elif tallies and (line := view.tally(rows)) != shown:
                    console.print(line)
                    shown = line
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), REFRESH_PERIOD)
        return fleet.rows()


COMMAND = Command(
    name="run",
    description=(
        "Watch a plugin registry dir and register every DRA driver socket that appears, exactly as the"
        " kubelet would (handshake, service negotiation, instances, ResourceSlice wiping, health streams),"
        " logging each step, and run the pods bound to the node as far as DRA goes (prepare, status Running,"
        " unprepare on deletion), optionally serving the kubelet's DRA metrics. Runs until Ctrl-C or SIGTERM."
    ),
    add_arguments=add_arguments,
    run=run,
)
