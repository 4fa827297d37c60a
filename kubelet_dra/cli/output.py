"""Where results go: rich tables for people, JSON for machines (``--output json``)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kubelet_dra.peers import log

if TYPE_CHECKING:
    from rich.console import Console

_console: list[Console] = []


def console() -> Console:
    """The stdout console for human-readable results (rich degrades to plain text in pipes).

    rich loads here, on first use: a driver process or a usage error never prints through it."""
    if not _console:
        from rich.console import Console

        _console.append(Console(highlight=False, soft_wrap=True))
    return _console[0]


def print_json(data: Any) -> None:
    """One JSON document on stdout, stable key order, for ``--output json``."""
    sys.stdout.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
    sys.stdout.flush()


@contextlib.contextmanager
def quiet_logs(verbosity: int) -> Iterator[None]:
    """Logs go to stderr with -v N; without, they would drown a live view, so they are dropped."""
    if verbosity > 0:
        yield
        return
    with open(os.devnull, "w") as sink:
        log.configure(0, sink)
        yield
