"""``kubelet-dra driver``: run the bundled reference DRA driver, or steer a running one.

``kubelet-dra driver [flags]`` is a real kubelet plugin (any kubelet, the real one included, can
register it). ``fault``, ``health`` and ``status`` talk to a running driver through the control
socket in its plugin dir. Every flag can also come from an environment variable named
``KUBELET_DRA_<FLAG>`` (``--driver-name`` → ``KUBELET_DRA_DRIVER_NAME``), as a DaemonSet would set it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubelet_dra.cli import output
from kubelet_dra.cli.command import Command, raise_open_files_limit
from kubelet_dra.peers.driver import control
from kubelet_dra.peers.driver.configfile import EXAMPLE, load_config
from kubelet_dra.peers.driver.knobs import KNOBS, Faults, Knob, parse_assignment, parse_bool, parse_seconds
from kubelet_dra.peers.driver.settings import (
    CONTROL_SOCKET,
    DEFAULT_CDI_ROOT,
    DEFAULT_DEVICES,
    DEFAULT_DRIVER_NAME,
    DEFAULT_HEALTH_INTERVAL,
    DEFAULT_PLUGINS_DIR,
    DEFAULT_REGISTRY_DIR,
    DEFAULT_REPUBLISH_DELAY,
    DriverSettings,
    default_plugin_dir,
    resolve,
)
from kubelet_dra.peers.errors import UsageError

ENV_PREFIX = "KUBELET_DRA_"


def env_name(flag: str) -> str:
    return ENV_PREFIX + flag.lstrip("-").replace("-", "_").upper()


def _env(flag: str) -> str | None:
    """The flag's default from its environment variable; argparse parses it like a command-line value."""
    return os.environ.get(env_name(flag))


def _knob_flag(knob: Knob) -> str:
    return f"--fault-{knob.name}"


def _add_target(parser: argparse.ArgumentParser) -> None:
    """How the control commands find a running driver: its plugin dir, or its name."""
    parser.add_argument(
        "--plugin-dir", type=Path, metavar="DIR", default=_env("--plugin-dir"), help="the driver's plugin dir"
    )
    parser.add_argument(
        "--driver-name",
        metavar="NAME",
        default=_env("--driver-name"),
        help=f"the driver's name, for the default plugin dir {DEFAULT_PLUGINS_DIR}/<driver>",
    )


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "fault knobs can be flipped while the driver runs:\n"
        "  kubelet-dra driver fault --plugin-dir DIR set KNOB=VALUE ... | get | clear [KNOB ...]\n\n"
        "--config FILE (YAML), for example:\n" + "".join(f"  {line}\n" for line in EXAMPLE.splitlines())
    )
    parser.add_argument(
        "--driver-name",
        metavar="NAME",
        default=_env("--driver-name"),
        help=f"DRA driver name (default: driverName from --config, else {DEFAULT_DRIVER_NAME})",
    )
    parser.add_argument(
        "--node-name", metavar="NAME", default=_env("--node-name"), help="the node this driver runs on (required)"
    )
    parser.add_argument(
        "--nodes",
        metavar="PATTERN",
        default=_env("--nodes"),
        help="serve the driver on many nodes from this one process, named by a pattern ('sim-{0..999}', 'n1,n2');"
        " a {node} in --registry-dir, --plugin-dir, --cdi-root and --kubeconfig stands for each node's name",
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        default=_env("--kubeconfig"),
        help="kubeconfig of the API server (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)",
    )
    parser.add_argument(
        "--registry-dir",
        type=Path,
        metavar="DIR",
        default=_env("--registry-dir") or DEFAULT_REGISTRY_DIR,
        help="the kubelet's plugin registry dir, where <driver>-reg.sock goes (default: %(default)s)",
    )
    parser.add_argument(
        "--plugin-dir",
        type=Path,
        metavar="DIR",
        default=_env("--plugin-dir"),
        help=f"where dra.sock, {CONTROL_SOCKET} and the checkpoint go (default: {DEFAULT_PLUGINS_DIR}/<driver>)",
    )
    parser.add_argument(
        "--cdi-root",
        type=Path,
        metavar="DIR",
        default=_env("--cdi-root") or DEFAULT_CDI_ROOT,
        help="where CDI spec files go (default: %(default)s)",
    )
    parser.add_argument(
        "--devices",
        type=int,
        metavar="N",
        default=_env("--devices"),
        help=f"devices on this node (default: devices from --config, else {DEFAULT_DEVICES})",
    )
    parser.add_argument(
        "--config", type=Path, metavar="FILE", default=_env("--config"), help="driver config file (YAML)"
    )
    parser.add_argument(
        "--health",
        type=parse_bool,
        nargs="?",
        const=True,
        metavar="BOOL",
        default=_env("--health") or False,
        help="serve and advertise the v1alpha1.DRAResourceHealth stream",
    )
    parser.add_argument(
        "--health-interval",
        type=parse_seconds,
        metavar="SECONDS",
        default=_env("--health-interval") or DEFAULT_HEALTH_INTERVAL,
        help="seconds between full health reports (default: %(default)s)",
    )
    parser.add_argument(
        "--republish-delay",
        type=parse_seconds,
        metavar="SECONDS",
        default=_env("--republish-delay") or DEFAULT_REPUBLISH_DELAY,
        help="seconds before changed or deleted ResourceSlices are published again (default: %(default)s)",
    )
    parser.add_argument(
        "--no-op",
        type=parse_bool,
        nargs="?",
        const=True,
        metavar="BOOL",
        default=_env("--no-op") or False,
        help="answer every NodePrepareResources/NodeUnprepareResources claim at once with no devices: no claim"
        " read, no CDI spec, no checkpoint (measures what the kubelet side costs)",
    )
    knobs = parser.add_argument_group("fault knobs (each breaks something a kubelet or conformance check must notice)")
    for knob in KNOBS:
        extra: dict[str, Any] = {"nargs": "?", "const": "true"} if knob.kind == "bool" else {}
        knobs.add_argument(
            _knob_flag(knob), metavar=knob.metavar, default=_env(_knob_flag(knob)), help=knob.help, **extra
        )
    actions = parser.add_subparsers(dest="driver_action", metavar="ACTION", title="control a running driver")
    fault = actions.add_parser(
        "fault",
        help="set, get or clear fault knobs of a running driver",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="knobs:\n" + "".join(f"  {knob.name}={knob.metavar}\n      {knob.help}\n" for knob in KNOBS),
    )
    _add_target(fault)
    fault.add_argument("fault_op", choices=("set", "get", "clear"), help="what to do")
    fault.add_argument("assignments", nargs="*", metavar="KNOB[=VALUE]", help="knobs to set or clear")
    health = actions.add_parser("health", help="set the health a running driver reports for devices")
    _add_target(health)
    health.add_argument("states", nargs="+", metavar="DEVICE=Healthy|Unhealthy|Unknown")
    health.add_argument("--message", default="", help="message reported with the new health")
    status = actions.add_parser(
        "status", help="show a running driver's registration, prepared claims, blocked calls and knobs"
    )
    _add_target(status)


def settings_from_args(args: argparse.Namespace) -> DriverSettings:
    return resolve(
        node_name=args.node_name or "",
        driver_name=args.driver_name,
        registry_dir=args.registry_dir,
        plugin_dir=args.plugin_dir,
        cdi_root=args.cdi_root,
        devices=args.devices,
        config=load_config(args.config) if args.config else None,
        kubeconfig=args.kubeconfig,
        health=args.health,
        health_interval=args.health_interval,
        republish_delay=args.republish_delay,
        no_op=args.no_op,
    )


NODE = "{node}"
PER_NODE_PATHS = ("--registry-dir", "--plugin-dir", "--cdi-root")
"""Each node's own dirs: two nodes sharing one would share their sockets or CDI specs."""


def many_settings(args: argparse.Namespace) -> list[DriverSettings]:
    """``--nodes``: one instance's settings per node, ``{node}`` in the paths filled in with its name."""
    if args.node_name:
        raise UsageError("--node-name names one node, and --nodes many", where="--node-name", fix="give one of them")
    from kubelet_dra.workbench.fleet.nodenames import expand  # here: only --nodes needs the name patterns

    names = expand(args.nodes)
    given = {"--registry-dir": args.registry_dir, "--plugin-dir": args.plugin_dir, "--cdi-root": args.cdi_root}
    for flag in PER_NODE_PATHS:
        if len(names) > 1 and NODE not in str(given[flag] or ""):
            raise UsageError(
                f"{flag} must hold {NODE} when the driver serves many nodes: each node has its own",
                where=flag,
                fix=f"e.g. {flag} /var/lib/kubelet-dra/{NODE}/{flag[2:]}",
            )
    found = []
    for name in names:

        def path(value: Path | str | None, node: str = name) -> Path | None:
            return None if value is None else Path(str(value).replace(NODE, node))

        kubeconfig = args.kubeconfig.replace(NODE, name) if args.kubeconfig else None
        found.append(
            settings_from_args(
                argparse.Namespace(
                    **{
                        **vars(args),
                        "node_name": name,
                        "kubeconfig": kubeconfig,
                        "registry_dir": path(args.registry_dir),
                        "plugin_dir": path(args.plugin_dir),
                        "cdi_root": path(args.cdi_root),
                    }
                )
            )
        )
    return found


def faults_from_args(args: argparse.Namespace) -> Faults:
    values = {knob.name: getattr(args, _knob_flag(knob)[2:].replace("-", "_")) for knob in KNOBS}
    return Faults({name: value for name, value in values.items() if value is not None})


async def serve(settings: DriverSettings, faults: Faults) -> int:
    """Run the driver until SIGTERM/SIGINT (or a fault knob) stops it."""
    from kubelet_dra.peers.driver.plugin import DriverPlugin  # here: fault, health and status never serve

    plugin = DriverPlugin(settings, faults=faults)
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, plugin.request_stop)
    await plugin.run()
    return 0


def _control_socket(args: argparse.Namespace) -> Path:
    plugin_dir = args.plugin_dir or default_plugin_dir(args.driver_name or DEFAULT_DRIVER_NAME)
    return plugin_dir / CONTROL_SOCKET


def _print(args: argparse.Namespace, data: dict[str, Any]) -> None:
    if args.output == "json":
        output.print_json(data)
        return
    for key, value in data.items():
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        output.console().print(f"{key}={text}", markup=False)
    if not data:
        output.console().print("(none)")


def _fault(args: argparse.Namespace) -> int:
    if args.fault_op == "set":
        if not args.assignments:
            raise UsageError("nothing to set", fix="name knobs as KNOB=VALUE")
        message: dict[str, Any] = {"op": "set", "knobs": dict(map(parse_assignment, args.assignments))}
    elif args.fault_op == "clear":
        message = {"op": "clear", "knobs": [name.partition("=")[0] for name in args.assignments]}
    else:
        message = {"op": "get"}
    _print(args, asyncio.run(control.request(_control_socket(args), message))["knobs"])
    return 0


def _health(args: argparse.Namespace) -> int:
    states = {}
    for assignment in args.states:
        device, sep, state = assignment.partition("=")
        if not sep:
            raise UsageError(f"expected DEVICE=STATE, got {assignment!r}")
        states[device] = state
    message = {"op": "health", "devices": states, "message": args.message}
    _print(args, asyncio.run(control.request(_control_socket(args), message))["health"])
    return 0


def _status(args: argparse.Namespace) -> int:
    _print(args, asyncio.run(control.request(_control_socket(args), {"op": "status"}))["status"])
    return 0


ACTIONS: dict[str, Callable[[argparse.Namespace], int]] = {"fault": _fault, "health": _health, "status": _status}


async def serve_nodes(settings: list[DriverSettings], args: argparse.Namespace) -> int:
    """``--nodes``: every node's instance in this process until SIGTERM/SIGINT."""
    from kubelet_dra.peers.driver import many  # here: fault, health and status never serve

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await many.serve_many(settings, lambda: faults_from_args(args), stop)
    return 0


def run(args: argparse.Namespace) -> int:
    action = getattr(args, "driver_action", None)
    if action:
        return ACTIONS[action](args)
    if args.nodes:
        settings = many_settings(args)
        faults_from_args(args)  # a bad knob value is refused before any node starts
        raise_open_files_limit()
        return asyncio.run(serve_nodes(settings, args))
    return asyncio.run(serve(settings_from_args(args), faults_from_args(args)))


COMMAND = Command(
    name="driver",
    add_arguments=add_arguments,
    run=run,
    description="Run the bundled reference DRA driver, a real kubelet plugin, or steer a running one."
    " Every flag can also be set through KUBELET_DRA_<FLAG> (e.g. KUBELET_DRA_DRIVER_NAME).",
)
