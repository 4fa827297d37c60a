"""Every message the kubelet's DRA paths write at warning or error level or put in a pod event, for 1.36 and 1.37.

One catalogue for ``explain`` and ``debug``: each ``Message`` keeps where each release writes it, its pattern,
what happened, the likely causes (most frequent first), the fix and the command that shows more. The order
matters: a pod worker's line wraps the manager's error, so specific messages come before the wrappers.
docs/kubelet-messages.md is generated from it (``kubelet-dra explain --catalogue``).
"""

from __future__ import annotations

from kubelet_dra.workbench.debug.catalogue import claims, health, registration
from kubelet_dra.workbench.debug.catalogue.entry import RELEASES, Message, Source

MESSAGES: tuple[Message, ...] = (*registration.MESSAGES, *health.MESSAGES, *claims.MESSAGES)
PAGE = "docs/kubelet-messages.md"


def find(line: str) -> Message | None:
    """The first message whose pattern is in ``line``, or ``None``."""
    return next((message for message in MESSAGES if message.pattern.search(line)), None)


def mode_link(mode: str) -> str:
    """Where a failure mode's messages are explained on the generated page."""
    key = next((m.anchor for m in MESSAGES if m.mode == mode), "")
    return f"{PAGE}#{key}" if key else PAGE


def mode_command(mode: str) -> str:
    """The command that prints a failure mode's entries of the page, for a reader without a clone."""
    return f"kubelet-dra explain --mode {mode}"


def of_mode(mode: str) -> list[Message]:
    """The messages of one failure mode (``F12`` or ``f12``), in catalogue order."""
    return [message for message in MESSAGES if message.mode == mode.upper()]


__all__ = ["MESSAGES", "PAGE", "RELEASES", "Message", "Source", "find", "mode_command", "mode_link", "of_mode"]
