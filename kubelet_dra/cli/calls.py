"""``kubelet-dra calls diff A.jsonl B.jsonl``: two call recordings side by side, normalized.

For a tap of the real kubelet beside a ``kubelet-dra run --record-calls`` of the same pod
lifecycle: UIDs, generated claim names, pools, paths, request IDs and times are normalized,
repeated calls folded, and what is left shown as a unified diff. Exit 0 when they match, 1 when
they differ, 2 when a file cannot be read.
"""

from __future__ import annotations

import argparse

from rich.markup import escape

from kubelet_dra.cli import add_global_flags, output
from kubelet_dra.cli.command import Command
from kubelet_dra.workbench.tap.diff import diff

_COLORS = {"+": "green", "-": "red", "@": "cyan"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    compare = actions.add_parser("diff", help="the difference of two --record-calls files, normalized")
    add_global_flags(compare, defaults=False)
    compare.add_argument("a", metavar="A.jsonl", help="the first recording (e.g. a tap of the real kubelet)")
    compare.add_argument("b", metavar="B.jsonl", help="the second recording (e.g. kubelet-dra run --record-calls)")


def run(args: argparse.Namespace) -> int:
    result = diff(args.a, args.b)
    if args.output == "json":
        output.print_json(result.to_json())
    elif result.same:
        output.console().print(f"same calls: {len(result.a_lines)} line(s) after normalizing")
        for line in result.a_lines:
            output.console().print(f"  {escape(line)}")
    else:
        for line in result.unified():
            color = _COLORS.get(line[:1]) if not line.startswith(("+++", "---")) else "bold"
            output.console().print(f"[{color}]{escape(line)}[/{color}]" if color else escape(line))
    return 0 if result.same else 1


COMMAND = Command(
    name="calls",
    description=(
        "calls diff A.jsonl B.jsonl: the calls of two recordings driver by driver, registration handshakes, DRA"
        " calls and health streams apart, each in the order they started, with UIDs,"
        " generated claim names, pools, paths, request IDs and times replaced by numbered placeholders and"
        " repeated calls folded, shown as a unified diff. Exit 0 when they match, 1 when they differ."
    ),
    add_arguments=add_arguments,
    run=run,
)
