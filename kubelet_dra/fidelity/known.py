"""The differences between kubelet-dra and the real kubelet that are known and accepted, each with why.

A column that differs in a scenario listed here does not fail ``replay --compare``; docs/fidelity.md
gives the same reason in its table (a test holds the two together). Everything else that differs
is a bug of one side or of the scenario, to be fixed rather than listed.
"""

from __future__ import annotations

RESTART_RACE = (
    "timing: the scenario restarts the kubelet as soon as {condition}; the real kubelet may not have reached {what}"
    " by then (kubelet-dra always has), so {effect}"
)
DELETED = "the pod is being deleted"
SYNC_BEFORE_REGISTRATION = (
    "kubelet-dra's gap: its restarted node syncs its pods while it registers its drivers again, and on a loaded"
    " machine the pod can come first (Warning 'DRA driver gpu.example.com is not registered', then the retry; seen"
    " in 3 of 15 runs); the real kubelet registered the drivers first in every run"
)
KILLED_STATUS_WRITE = RESTART_RACE.format(
    condition=DELETED,
    what="its status write of the killed containers",
    effect="the line `Running deleting=yes … terminated` is written or not",
)
KNOWN: dict[tuple[str, str], str] = {
    ("kubelet-crash-during-prepare", "slices"): (
        "timing: each start of either kubelet wipes the node's slices, and the driver publishes again 500 ms later"
        " (its republishDelay); kubelet-dra's second crash comes within that (its start takes milliseconds:"
        " 'start-up wipe deleted 0 ResourceSlice(s)'), the real kubelet's after it (a start takes about 2 s), so"
        " only the real kubelet's second start-up wipe finds the re-published slice"
    ),
    ("kubelet-restart-during-prepare", "events"): SYNC_BEFORE_REGISTRATION,
    ("kubelet-restart-during-prepare-two-drivers", "events"): SYNC_BEFORE_REGISTRATION,
    ("kubelet-restart-during-prepare-two-drivers", "calls"): RESTART_RACE.format(
        condition="the first driver prepared",
        what="its call to the second driver (it calls drivers one after the other and dials each at its first call)",
        effect="the second driver's blocked prepare is cut (CANCELLED) or never made",
    ),
    ("kubelet-restart-during-unprepare", "calls"): RESTART_RACE.format(
        condition=DELETED,
        what="the unprepare (it kills the containers first)",
        effect="the blocked unprepare is cut (CANCELLED) or never made (both seen)",
    ),
    ("kubelet-restart-during-unprepare", "pod status"): KILLED_STATUS_WRITE,
    ("kubelet-restart-during-unprepare-two-drivers", "calls"): RESTART_RACE.format(
        condition=DELETED,
        what="the unprepare (it kills the containers first, then calls the drivers one after the other)",
        effect="a blocked unprepare is cut (CANCELLED) or never made",
    ),
    ("kubelet-restart-during-unprepare-two-drivers", "pod status"): KILLED_STATUS_WRITE,
}
"""(scenario, column) → why that column may differ on the real kubelet."""


def known_difference(scenario: str, column: str) -> str:
    """Why ``column`` of ``scenario`` may differ, or ``""`` when it must be identical."""
    return KNOWN.get((scenario, column), "")
