"""Where results go: rich tables for people, JSON for machines (``--output json``)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from kubelet_dra.peers import log

if TYPE_CHECKING:
    from rich.console import Console

    from kubelet_dra.workbench import junit

_console: list[Console] = []
PIPE_WIDTH = 10_000
"""The console's width in a pipe (a CI log, a file): rich would assume 80 columns and fold every table cell
mid-word; this wide, a table (never expanded) is as wide as its content. ``COLUMNS`` still sets a width."""


def console() -> Console:
    """The stdout console for human-readable results (rich degrades to plain text in pipes).

    rich loads here, on first use: a driver process or a usage error never prints through it."""
    if not _console:
        from rich.console import Console

        made = Console(highlight=False, soft_wrap=True)
        if not made.is_terminal and "COLUMNS" not in os.environ:
            made.width = PIPE_WIDTH
        _console.append(made)
    return _console[0]


def print_json(data: Any) -> None:
    """One JSON document on stdout, stable key order, for ``--output json``."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
    sys.stdout.flush()


def in_ci(suite: str, headline: str, cases: Sequence[junit.Case], *, json_output: bool) -> None:
    """Under GitHub Actions, the suite's annotations and step summary (docs/conformance.md#in-ci): on stdout
    beside the text, on stderr when stdout is one JSON document. Loaded here: the driver's commands never pay."""
    from kubelet_dra.workbench import ghactions

    ghactions.report(suite, headline, cases, sys.stderr if json_output else sys.stdout, os.environ)


@contextlib.contextmanager
def quiet_logs(verbosity: int) -> Iterator[None]:
    """Logs go to stderr with -v N; without, they would drown a live view, so they are dropped."""
    if verbosity > 0:
        yield
        return
    with open(os.devnull, "w") as sink:
        log.configure(0, sink)
        yield
