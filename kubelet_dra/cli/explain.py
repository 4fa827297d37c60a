"""``kubelet-dra explain``: what a kubelet DRA log line or pod event means, its likely causes and the fix.

For a node that is not at hand: paste the message, or pipe a whole log (``journalctl -u kubelet |
kubelet-dra explain``); every line holding a catalogued message is explained, every other warning or
error line that looks like the kubelet's DRA code is shown with its source and a next step.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from kubelet_dra.cli import output
from kubelet_dra.cli.command import Command
from kubelet_dra.peers.errors import ConfigError, UsageError
from kubelet_dra.workbench.debug import explain
from kubelet_dra.workbench.debug.catalogue import MESSAGES, PAGE, mode_command, of_mode
from kubelet_dra.workbench.debug.catalogue.page import render, render_mode

EXIT_EXPLAINED, EXIT_NONE, EXIT_UNKNOWN = 0, 1, 3
LAST = max(MESSAGES, key=lambda message: int(message.mode[1:])).mode


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("message", nargs="*", help="a message, as one or more words (default: read --file or stdin)")
    parser.add_argument("--file", metavar="FILE", help="a log file to read (- for stdin)")
    parser.add_argument(
        "--catalogue", action="store_true", help=f"print every known message as Markdown (the page {PAGE})"
    )
    parser.add_argument(
        "--mode", metavar="MODE", help=f"print the entries of one failure mode (F1-{LAST}) as Markdown, from the page"
    )


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
    if args.catalogue:
        sys.stdout.write(render())
        return EXIT_EXPLAINED
    if args.mode:
        messages = of_mode(args.mode)
        if not messages:
            raise UsageError(f"--mode {args.mode}: no such failure mode", fix=f"give one of F1-{LAST}")
        sys.stdout.write(render_mode(messages))
        return EXIT_EXPLAINED
    read = lines(args)
    found = explain(read)
    unknown = sum(1 for item in found if not item.known)
    if args.output == "json":
        output.print_json([item.to_json() for item in found])
    elif not found:
        output.console().print(
            f"No kubelet DRA line in the {len(read)} line(s) read. explain reads the kubelet's log (journalctl -u"
            " kubelet) and pod events (kubectl describe pod); on the node itself, kubelet-dra debug shows each"
            f" driver's registration and calls. Every known message: {PAGE}."
        )
    else:
        output.console().print(_table(found))
        if unknown:
            output.console().print(f"[yellow]{unknown} DRA line(s) not in the catalogue[/yellow]: next steps above.")
    if not found:
        return EXIT_NONE
    return EXIT_UNKNOWN if unknown else EXIT_EXPLAINED


def _table(found: list[explain.Explanation]) -> Table:
    table = Table(show_lines=True)
    for column in ("line", "mode", "what it means", "fix"):
        table.add_column(column, overflow="fold")
    for item in found:
        meaning = f"{escape(item.symptom)}\n[dim]{escape(item.text)}[/dim]"
        if item.note:
            meaning += f"\n[yellow]{escape(item.note)}[/yellow]"
        if item.causes:
            meaning += "\nlikely: " + "; ".join(f"({n}) {escape(c)}" for n, c in enumerate(item.causes, start=1))
        fix = escape(item.fix)
        if item.more:
            fix += f"\n[cyan]more: {escape(item.more)}[/cyan]"
        fix += f"\n[dim]{escape(item.source)}[/dim]\n[dim]{escape(_entry(item))}[/dim]"
        mode = item.mode + ("\n[green]harmless[/green]" if item.harmless else "")
        table.add_row(str(item.line), mode, meaning, fix)
    return table


def _entry(item: explain.Explanation) -> str:
    """Where the entry is: the command that prints it, and the page of a clone."""
    return f"{mode_command(item.mode)} · {item.link}" if item.known else item.link


COMMAND = Command(
    name="explain",
    description=(
        "Read a message (the arguments), a log file (--file) or stdin, and explain every line that holds a known"
        f" kubelet DRA message (1.36 and 1.37): its failure mode (F1-{LAST}), what it means, its likely causes, the fix"
        " and the command that shows more. A warning or error line that looks like the kubelet's DRA code but is in"
        f" no entry is shown with its source and a next step. --catalogue prints every entry ({PAGE}), --mode the"
        " entries of one mode. Exit 0 when"
        " every DRA line was explained, 1 when there was no DRA line at all, 3 when some DRA line is not in the"
        " catalogue."
    ),
    add_arguments=add_arguments,
    run=run,
)
