"""What a conformance check is: a stable id, a title, tags, the rule it enforces, and one async function.

Checks register themselves with ``@check(...)`` in the modules of ``kubelet_dra.conformance.checks``;
``CHECKS`` keeps them in id order. A check passes when its function returns, fails when it calls
``ctx.fail`` (or ``ctx.expect`` does), and skips with a reason through ``ctx.skip`` or when the
target lacks something the check ``needs``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from kubelet_dra.conformance.context import CheckContext

TAGS: frozenset[str] = frozenset(
    {"registration", "prepare", "unprepare", "cdi", "slices", "health", "lifecycle", "versions", "slow", "disruptive"}
)
ID_PATTERN = re.compile(r"^[A-Z]{3}-\d{3}$")

RESTART = "restart"
"""The suite starts the driver itself (``--driver-cmd``), so it can stop, kill and restart it."""
EMBEDDED = "embedded"
"""The embedded API server is in use (it can be restarted, and restricted per node)."""
HEALTH = "health"
"""The driver serves the DRAResourceHealth service."""
REFERENCE = "reference"
"""The bundled reference driver: its control socket can flip fault knobs."""
NEEDS: dict[str, str] = {
    RESTART: "needs --driver-cmd: the driver was already running, so the suite cannot restart it",
    EMBEDDED: "needs the embedded API server (not --kubeconfig)",
    HEALTH: "the driver does not serve the DRAResourceHealth service (health monitoring is optional)",
    REFERENCE: "needs the bundled reference driver's control socket",
}

CheckFunction = Callable[["CheckContext"], Awaitable[None]]


class CheckFailed(Exception):
    """The driver broke the rule; the message says what was expected and what was seen."""


class CheckSkipped(Exception):
    """The check does not apply to this driver or setup; the message is the reason."""


@attrs.frozen
class Check:
    id: str
    title: str
    tags: frozenset[str]
    reference: str
    """Where the rule comes from: ``SPEC §6.6 C3``, ``USERS #14``."""
    run: CheckFunction
    needs: frozenset[str] = frozenset()

    def matches(self, pattern: re.Pattern[str]) -> bool:
        return bool(pattern.search(self.id) or pattern.search(self.title))


CHECKS: dict[str, Check] = {}


def check(
    check_id: str, title: str, *, tags: Iterable[str], reference: str, needs: Iterable[str] = ()
) -> Callable[[CheckFunction], CheckFunction]:
    """Register the decorated function as check ``check_id``; ids and tags are validated at import."""

    def register(function: CheckFunction) -> CheckFunction:
        if not ID_PATTERN.match(check_id):
            raise ValueError(f"check id {check_id!r} is not like REG-001")
        if check_id in CHECKS:
            raise ValueError(f"check id {check_id} is used twice")
        unknown = set(tags) - TAGS | set(needs) - set(NEEDS)
        if unknown:
            raise ValueError(f"check {check_id}: unknown tags or needs {sorted(unknown)}")
        CHECKS[check_id] = Check(check_id, title, frozenset(tags), reference, function, frozenset(needs))
        return function

    return register


def all_checks() -> list[Check]:
    """Every check, in id order (importing the check modules registers them)."""
    from kubelet_dra.conformance import checks  # noqa: F401  (registers the checks)

    return [CHECKS[key] for key in sorted(CHECKS)]
