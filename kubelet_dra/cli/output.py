"""Where results go: rich tables for people, JSON for machines (``--output json``)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

from rich.console import Console

from kubelet_dra.peers import log

_console: list[Console] = []


def console() -> Console:
    """The stdout console for human-readable results (rich degrades to plain text in pipes)."""
    if not _console:
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
