"""Kubernetes quantities ("500m", "1Gi", "2e3") as numbers, parsed by the official client's parser.

The parser is imported at the first parse: importing the ``kubernetes`` package costs a process
about a fifth of a second of CPU, and most processes (a driver, most CLI commands) never parse one.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any


def parse_quantity(text: Any) -> Decimal:
    """The quantity's value; ValueError when ``text`` is no quantity."""
    from kubernetes.utils.quantity import parse_quantity as official

    return Decimal(official(str(text)))
