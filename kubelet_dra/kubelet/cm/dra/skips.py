"""Optional node operations (KEP-5945, docs/releases.md): which driver calls a claim needs on this node.

A driver whose devices need nothing done on the node publishes ``skipNodeOperations`` in its
ResourceSlices; the scheduler copies the list into each allocation result. The kubelet skips a
call for a driver only when *every* device of that driver in the claim skips it, so one device
that needs preparing is prepared like any other.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

PREPARE_OPERATION = "NodePrepareResources"
UNPREPARE_OPERATION = "NodeUnprepareResources"
ALL_OPERATIONS = "*"
OPERATIONS = frozenset({PREPARE_OPERATION, UNPREPARE_OPERATION})
GATE_DISABLED = "DRAOptionalNodeOperations feature gate is disabled on kubelet"


class OptionalOperations(enum.Enum):
    """How a node treats ``skipNodeOperations`` in allocation results: its release and its feature gate."""

    UNKNOWN = "unknown"
    """A release without the field (1.36): results are read as if it were absent."""
    DISABLED = "disabled"
    """The gate exists but is off: a result that asks to skip fails the claim."""
    ENABLED = "enabled"


def operations(values: Iterable[Any]) -> frozenset[str]:
    """The operations a ``skipNodeOperations`` list names: ``*`` is all of them, unknown values are ignored
    (as the API asks of the kubelet, so a newer control plane's values do not break an older node)."""
    names = {str(value) for value in values}
    return OPERATIONS if ALL_OPERATIONS in names else frozenset(names & OPERATIONS)


def driver_skips(results: Iterable[Mapping[str, Any]]) -> dict[str, frozenset[str]]:
    """Driver → the operations every one of its allocated devices skips; drivers that skip nothing are left out."""
    skips: dict[str, frozenset[str]] = {}
    for result in results:
        driver = str(result.get("driver", ""))
        skipped = operations(result.get("skipNodeOperations") or ())
        skips[driver] = skips[driver] & skipped if driver in skips else skipped
    return {driver: skipped for driver, skipped in skips.items() if skipped}


def asks_to_skip(results: Iterable[Mapping[str, Any]]) -> bool:
    """Whether any result names an operation to skip (what a node with the gate off refuses)."""
    return any(operations(result.get("skipNodeOperations") or ()) for result in results)
