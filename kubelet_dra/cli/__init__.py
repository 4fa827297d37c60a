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

SUBCOMMANDS: tuple[str, ...] = (
    "demo",
    "services",
    "apiserver",
    "driver",
    "run",
    "debug",
    "tap",
    "calls",
    "explain",
    "call",
    "checkpoint",
    "controlplane",
    "replay",
    "conformance",
)

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
    """The subcommand ``argv`` names alone, else all of them (for help and for the error listing them).

    Importing one subcommand's module instead of all keeps a driver process or a short command
    from paying for the API server, the node and the suites at every start.
    """
    chosen = chosen_command(argv)
    names = (chosen,) if chosen in SUBCOMMANDS else SUBCOMMANDS
    return [importlib.import_module(f"kubelet_dra.cli.{name}").COMMAND for name in names]


def build_parser(commands: Sequence[Command]) -> argparse.ArgumentParser:
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
    for command in commands:
        sub = subparsers.add_parser(command.name, help=command.help, description=command.description or command.help)
        add_global_flags(sub, defaults=False)
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
