"""``kubelet-dra explain``: which failure mode a kubelet or driver log line is, and what fixes it.

For a node that is not at hand: paste the message, or pipe a whole log (``journalctl -u kubelet |
kubelet-dra explain``); every line holding a known message is explained, the rest skipped.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from kubelet_dra.cli import output
from kubelet_dra.cli.command import Command
from kubelet_dra.debug import explain
from kubelet_dra.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("message", nargs="*", help="a message, as one or more words (default: read --file or stdin)")
    parser.add_argument("--file", metavar="FILE", help="a log file to read (- for stdin)")


def lines(args: argparse.Namespace) -> list[str]:
    if args.message:
        return [" ".join(args.message)]
    if args.file and args.file != "-":
        try:
            return Path(args.file).read_text(errors="replace").splitlines()
        except OSError as err:
            raise ConfigError(
                f"cannot read the log: {err.strerror}", where=args.file, fix="give a readable file"
            ) from err
    return sys.stdin.read().splitlines()


def run(args: argparse.Namespace) -> int:
    found = explain(lines(args))
    if args.output == "json":
        output.print_json([item.to_json() for item in found])
    elif not found:
        output.console().print("No known kubelet DRA message found.")
    else:
        table = Table(show_lines=True)
        for column in ("line", "mode", "what it means", "fix"):
            table.add_column(column, overflow="fold")
        for item in found:
            meaning = f"{escape(item.symptom)}\n[dim]{escape(item.text)}[/dim]"
            if item.note:
                meaning += f"\n[yellow]{escape(item.note)}[/yellow]"
            table.add_row(str(item.line), item.mode, meaning, escape(item.fix))
        output.console().print(table)
    return 0 if found else 1


COMMAND = Command(
    name="explain",
    help="explain kubelet/driver DRA log lines: the failure mode of each known message and its fix",
    description=(
        "Read a message (the arguments), a log file (--file) or stdin, and explain every line that holds a known"
        " kubelet DRA message: its failure mode (F1-F20), what it means and what fixes it. Exit 0 when a line was"
        " explained, 1 when none was recognised."
    ),
    add_arguments=add_arguments,
    run=run,
)
