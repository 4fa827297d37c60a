"""Two traces of one scenario, column by column: identical, a known difference, or a unified diff."""

from __future__ import annotations

import difflib
from typing import Any

import attrs

from kubelet_dra.workbench.fidelity.columns import COLUMNS, Trace
from kubelet_dra.workbench.fidelity.known import known_difference

IDENTICAL = "identical"
KNOWN = "known"
DIFFERS = "differs"
SIMULATED = "kubelet-dra"
REAL = "real kubelet"
REAL_MANAGER = "real DRA manager"
"""The other side of a file that prepares by hand: the real kubelet's DRA manager (``dra-manager-harness``)."""


@attrs.frozen
class ColumnResult:
    column: str
    diff: tuple[str, ...]
    """The unified diff from kubelet-dra's lines to the real kubelet's; empty when they are the same."""
    known: str = ""
    """Why this difference is accepted (``kubelet_dra.workbench.fidelity.known``)."""

    @property
    def verdict(self) -> str:
        if not self.diff:
            return IDENTICAL
        return KNOWN if self.known else DIFFERS

    def to_json(self) -> dict[str, Any]:
        return {"column": self.column, "verdict": self.verdict, "known": self.known, "diff": list(self.diff)}


def compare(scenario: str, simulated: Trace, other: Trace, *, real: str = REAL) -> tuple[ColumnResult, ...]:
    """Each column of ``simulated`` against ``other`` (played by ``real``), with the known reason where
    ``scenario`` has one."""
    results = []
    for column in COLUMNS:
        ours, theirs = simulated.columns[column], other.columns[column]
        diff = () if ours == theirs else tuple(difflib.unified_diff(ours, theirs, SIMULATED, real, lineterm="", n=3))
        results.append(ColumnResult(column, diff, known_difference(scenario, column) if diff else ""))
    return tuple(results)
