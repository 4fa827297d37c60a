"""What a subcommand module provides: a name, its flags and the function that runs it."""

from __future__ import annotations

import argparse
import resource
from collections.abc import Callable

import attrs


@attrs.frozen
class Command:
    """One ``kubelet-dra <name>`` subcommand (its one-line help is in ``kubelet_dra.cli.SUBCOMMANDS``).

    ``run`` receives the parsed flags (global ones included: ``verbosity``, ``output``) and
    returns the process exit code. It raises ``KubeletDRAError`` for anything the user can fix.
    """

    name: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""


def raise_open_files_limit() -> None:
    """Lift the soft limit on open files to the hard one, as every Go program does at start.

    A process serving a thousand nodes holds several descriptors per node (sockets, watches,
    connections): far more than the 1,024 many systems give by default as the soft limit.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
