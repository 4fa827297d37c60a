"""The differences between kubelet-dra and the real kubelet that are known and accepted, each with why.

A column that differs in a scenario listed here does not fail ``replay --compare``; docs/fidelity.md
gives the same reason in its table (a test holds the two together). Everything else that differs
is a bug of one side or of the scenario, to be fixed rather than listed.
"""

from __future__ import annotations

KNOWN: dict[tuple[str, str], str] = {}
"""(scenario, column) → why that column may differ on the real kubelet."""


def known_difference(scenario: str, column: str) -> str:
    """Why ``column`` of ``scenario`` may differ, or ``""`` when it must be identical."""
    return KNOWN.get((scenario, column), "")
