"""Argument types the commands share: a count or a duration that must be positive, a deadline scale, each refused by
argparse in its own one-line usage error."""

from __future__ import annotations

import argparse

from kubelet_dra.workbench.testbed.machineload import AUTO


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return value


def positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError("must be more than 0")
    return value


def deadline_scale(text: str) -> float | str:
    """A factor of at least 1, or ``auto``."""
    if text == AUTO:
        return AUTO
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"give a factor of at least 1 or {AUTO}") from None
    if not value >= 1:
        raise argparse.ArgumentTypeError(f"give a factor of at least 1 or {AUTO}")
    return value
