"""Explain kubelet and driver log lines: which failure mode each known message is, and the fix.

Node engineers have a log, not a live node. The kubelet's texts are precise but cryptic (a
validation error arrives behind "failed to send error", which does not mean the notification
failed); each recognised line gets the failure mode of SPEC.md §7, its symptom and what to do.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from kubelet_dra.registration import FAILURE_MODES, classify

MISLEADING_PREFIX = "failed to send error"
PREFIX_NOTE = (
    '"failed to send error" does not mean the notification failed: the kubelet rejected the plugin and told'
    " it why (RegistrationStatus.error); the reason follows"
)


@attrs.frozen
class Explanation:
    line: int
    text: str
    mode: str
    symptom: str
    fix: str
    note: str = ""

    def to_json(self) -> dict[str, object]:
        return attrs.asdict(self)


def explain(lines: Iterable[str]) -> list[Explanation]:
    """One explanation per line that holds a known message, in line order; other lines are skipped."""
    found = []
    for number, raw in enumerate(lines, start=1):
        text = raw.rstrip("\n")
        mode_id = classify(text)
        if mode_id is None:
            continue
        mode = FAILURE_MODES[mode_id]
        note = PREFIX_NOTE if MISLEADING_PREFIX in text else ""
        found.append(Explanation(number, text, mode.id, mode.symptom, mode.fix, note))
    return found
