"""The ``kubelet-dra`` command line: global flags, subcommand registry, error reporting.

Subcommands live one per module in this package, each exposing ``COMMAND``; they are listed
in ``SUBCOMMANDS`` in the order ``--help`` shows them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Sequence

from kubelet_dra import __version__
from kubelet_dra.cli.command import Command
from kubelet_dra.kubelet.release import DEFAULT_RELEASE, RELEASES
from kubelet_dra.peers import log
from kubelet_dra.peers.errors import KubeletDRAError

SUBCOMMANDS: dict[str, str] = {
    "demo": "run the whole DRA flow on one machine: API server, driver, node, control plane, one pod",
    "services": "list the gRPC services and method paths the kubelet uses with DRA drivers",
    "apiserver": "run the embedded Kubernetes API server for kubectl, real DRA drivers and the real kubelet",
    "driver": "run the bundled reference DRA driver (a real kubelet plugin with fault knobs)",
    "run": "run one simulated node: register DRA drivers from a registry dir, like the kubelet",
    "debug": "live registration debugger: sockets, handshakes, connections, calls, and each problem with its fix",
    "tap": "record every call a kubelet makes to its drivers, by standing between them (a recording proxy)",
    "calls": "compare two --record-calls recordings (a tap of the real kubelet, a kubelet-dra run), normalized",
    "explain": "explain kubelet DRA log lines and pod events: what each means, its likely causes and the fix",
    "call": "make one kubelet gRPC call to a driver by hand (GetInfo, notify, prepare, unprepare, health watch)",
    "checkpoint": "show or verify a kubelet's DRA claim checkpoint file (dra_manager_state)",
    "controlplane": "create claims from templates, allocate devices and reserve claims for pods, like a cluster would",
    "replay": "replay scenario files (kubelet restarts, plugin restarts, wipes…) against real drivers",
    "conformance": "certify a DRA driver at the socket level with named checks (like csi-sanity, and beyond)",
}
"""Each subcommand → its one-line help, in the order ``--help`` lists them. Kept here rather than in each
module's ``COMMAND``: the listing then imports no command's module (importing all of them took seconds)."""

TRACEBACK_VERBOSITY = 5


VALUED_GLOBAL_FLAGS = ("-v", "--verbosity", "--output")


def chosen_command(argv: Sequence[str]) -> str | None:
    """The subcommand ``argv`` names, if any: the first word that is neither a global flag nor its value."""
    words = iter(argv)
    for word in words:
        if word in VALUED_GLOBAL_FLAGS:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def load_commands(argv: Sequence[str] = ()) -> list[Command]:
    """The subcommand ``argv`` names, alone; none for help and for the error listing them (``SUBCOMMANDS`` says
    enough). A driver process or a short command does not pay for the API server, the node and the suites."""
    chosen = chosen_command(argv)
    return [importlib.import_module(f"kubelet_dra.cli.{chosen}").COMMAND] if chosen in SUBCOMMANDS else []


def build_parser(commands: Sequence[Command]) -> argparse.ArgumentParser:
    """Every subcommand with its help; the flags of those in ``commands`` (the one being run)."""
    parser = argparse.ArgumentParser(
        prog="kubelet-dra",
        description="The kubelet's side of Kubernetes Dynamic Resource Allocation, against real DRA drivers.",
    )
    emulated = ", ".join(r.version for r in RELEASES.values() if r is not DEFAULT_RELEASE)
    parser.add_argument(
        "--version",
        action="version",
        version=f"kubelet-dra {__version__} (emulates kubelet {DEFAULT_RELEASE.version}; also {emulated})",
    )
    add_global_flags(parser, defaults=True)
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    loaded = {command.name: command for command in commands}
    for name, help_text in SUBCOMMANDS.items():
        command = loaded.get(name)
        sub = subparsers.add_parser(name, help=help_text, description=(command and command.description) or help_text)
        add_global_flags(sub, defaults=False)
        if command is not None:
            command.add_arguments(sub)
            sub.set_defaults(run=command.run)
    return parser


def add_global_flags(parser: argparse.ArgumentParser, *, defaults: bool) -> None:
    """-v and --output work before or after the subcommand; only the top level sets defaults."""
    default = {} if defaults else {"default": argparse.SUPPRESS}
    parser.add_argument(
        "-v",
        "--verbosity",
        type=int,
        metavar="N",
        help="log verbosity like klog's -v (0 quiet .. 6 every gRPC message; 5+ shows tracebacks)",
        **({"default": 0} if defaults else default),
    )
    parser.add_argument(
        "--output",
        choices=("text", "json"),
        help="result format: text for people, json for programs",
        **({"default": "text"} if defaults else default),
    )


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(load_commands(argv))
    args = parser.parse_args(argv)
    log.configure(args.verbosity)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        return args.run(args)
    except KubeletDRAError as err:
        if args.verbosity >= TRACEBACK_VERBOSITY:
            traceback.print_exc()
        print(f"kubelet-dra: error: {err}", file=sys.stderr)
        if err.details:
            print(err.details, file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("kubelet-dra: interrupted", file=sys.stderr)
        return 130
