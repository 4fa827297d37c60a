"""``SuiteOptions``: the knobs of the conformance suite itself (not of the driver), read by the
check context and by the claim-making part of it alike."""

from __future__ import annotations

from pathlib import Path

import attrs

from kubelet_dra.workbench.testbed.claimshapes import ClaimShapes

NEVER_AFTER_LIMITS = 2.0
"""A driver that has not republished after twice ``--republish-within`` is judged never to."""


@attrs.frozen
class SuiteOptions:
    """Knobs of the suite itself (not of the driver)."""

    idempotency_count: int = 10
    latency_warning: float = 5.0
    """Warn when one prepare takes longer than this (the kubelet gives up after 45 s)."""
    republish_within: float = 75.0
    """How long a driver may take to publish its ResourceSlices again after they were wiped. The
    kubeletplugin helper's slice controller re-creates a slice it created less than a minute before the
    wipe only when that minute is over (its mutation cache TTL): 75 s gives the same verdict every run.
    A driver is watched twice as long before it is said never to republish."""
    check_timeout: float = 60.0
    """A check still running after this long fails. A wait a check makes by design (a republish watch, a
    health timeout) is added to it (``CheckContext.waiting``), so a driver slower than this but within those
    limits still passes."""
    device_class: str | None = None
    """An existing DeviceClass to allocate from; default: one the suite creates for all the driver's devices."""
    strict: bool = False
    """A failed ``should`` check fails the run too (``--strict``), instead of being a warning."""
    claims: ClaimShapes = attrs.Factory(ClaimShapes)
    """The claims the driver accepts (``--claim``); checks make every claim of these shapes."""
    outputs_dir: Path | None = None
    """Where the run's outputs go (the JUnit report's directory, or the current one): a ``--claim`` file suggested
    for a driver that refuses the default claim is written there; ``None`` writes none (the finding shows it)."""

    @property
    def republish_watch(self) -> float:
        """How long a wiped driver is watched before it is judged never to republish (it is only late before)."""
        return self.republish_within * NEVER_AFTER_LIMITS
