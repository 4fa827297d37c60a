"""What a subcommand module provides: a name, its flags and the function that runs it."""

from __future__ import annotations

import argparse
from collections.abc import Callable

import attrs


@attrs.frozen
class Command:
    """One ``kubelet-dra <name>`` subcommand.

    ``run`` receives the parsed flags (global ones included: ``verbosity``, ``output``) and
    returns the process exit code. It raises ``KubeletDRAError`` for anything the user can fix.
    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    description: str = ""
