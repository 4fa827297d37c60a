"""How much slower than quiet this machine runs now: for deadlines that must hold on a shared CI runner or beside
another build, where every process waits its turn for a core."""

from __future__ import annotations

import os

import attrs

AUTO = "auto"
"""``--deadline-scale auto``: the scale read from the machine's load when each file starts."""


def cpus() -> int:
    """The CPUs this process may run on (a container's limit, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def load_average() -> float | None:
    """The one-minute load average, or None where the platform keeps none."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def load_factor(load: float | None = None) -> float:
    """The one-minute load average per CPU, at least 1: roughly how many times longer a step takes than on an idle
    machine, since each runnable process gets that share of a core. ``load`` is a reading already taken."""
    load = load_average() if load is None else load
    return 1.0 if load is None else max(1.0, load / cpus())


@attrs.frozen
class DeadlineScale:
    """A factor for deadlines, and the words a report gives for it."""

    factor: float
    why: str

    @classmethod
    def of(cls, setting: float | str) -> DeadlineScale:
        """``setting`` is a factor (at least 1) or ``auto`` (``load_factor`` now)."""
        if setting != AUTO:
            return cls(float(setting), "--deadline-scale")
        load = load_average()
        why = "no load average" if load is None else f"load average {load:.1f}"
        return cls(load_factor(load), f"{why} on {cpus()} CPU(s)")

    def note(self) -> str:
        """What a report says of a run whose deadlines were scaled; nothing when they were not."""
        return f"deadlines ×{round(self.factor, 1):g} ({self.why})" if self.factor > 1 else ""
