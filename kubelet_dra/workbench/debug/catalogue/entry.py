"""One kubelet DRA message: where each release writes it, how to recognise it and what to do about it.

A message is kept per pattern, not per failure mode: one mode (F10, a service connection never made) shows
as several lines, and one line (the pod worker's "Failed to prepare dynamic resources") wraps many causes.
"""

from __future__ import annotations

import re

import attrs

RELEASES = ("1.36", "1.37")


@attrs.frozen
class Source:
    """Where the kubelet writes a message: its file under kubernetes/kubernetes, the function, the level."""

    file: str
    function: str
    level: str
    """``error``, ``warning``, ``info V<n>``, ``event Warning <reason>`` or ``returned`` (an error handed up and
    written by a caller: the pod worker, the plugin manager's retry)."""
    releases: tuple[str, ...] = RELEASES
    line: int = 0
    """The line in the real kubelet 1.36.2's own log header (``manager.go:1038``), 0 when not seen there."""

    @property
    def where(self) -> str:
        at = f":{self.line}" if self.line else ""
        only = "" if self.releases == RELEASES else f" ({', '.join(self.releases)} only)"
        return f"{self.file}{at} {self.function}{only}"


@attrs.frozen
class Message:
    key: str
    """Unique and stable: the anchor of the entry on the generated page."""
    mode: str
    """The failure mode shown to the user: ``F1`` … (F1–F20 as docs/protocol.md#failure-modes numbers them)."""
    pattern: re.Pattern[str] = attrs.field(converter=re.compile)
    title: str
    """What happened, in one line."""
    causes: tuple[str, ...]
    """Likely causes, the most frequent first."""
    fix: str
    more: str
    """The kubelet-dra command that shows more."""
    sources: tuple[Source, ...]
    example: str
    """The message as the kubelet writes it (names made up): it must match ``pattern``."""
    harmless: bool = False
    """An info line that reads like a problem: it announces what follows or a retry, nothing to fix."""

    @property
    def releases(self) -> tuple[str, ...]:
        return tuple(r for r in RELEASES if any(r in s.releases for s in self.sources))

    @property
    def anchor(self) -> str:
        return f"{self.mode.lower()}-{self.key}"
