"""What a conformance check is: a stable id, a title, tags, how much it matters, the sentence it enforces,
and one async function.

Checks register themselves with ``@check(...)`` in the modules of ``kubelet_dra.workbench.conformance.checks``;
``CHECKS`` keeps them in id order. A check passes when its function returns, fails when it calls
``ctx.fail`` (or ``ctx.expect`` does), and skips with a reason through ``ctx.skip`` or when the
target lacks something the check ``needs``. Its ``level`` says what a failure means: ``must`` (a pod
or the kubelet would fail, or an API contract says must) or ``should`` (a recommendation, reported as
a warning unless ``--strict``).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from kubelet_dra.workbench.conformance.checkcontext import Capabilities, CheckContext

MUST = "must"
"""The kubelet or a pod fails when the driver breaks the rule, or an API contract says it must."""
SHOULD = "should"
"""A recommendation of an API comment, KEP or docs: the kubelet copes when the driver does otherwise."""
LEVELS = (MUST, SHOULD)

TAGS: frozenset[str] = frozenset(
    {"registration", "prepare", "unprepare", "cdi", "slices", "health", "lifecycle", "versions", "slow", "disruptive"}
)
ID_PATTERN = re.compile(r"^[A-Z]{3}-\d{3}$")


@attrs.frozen
class Need:
    """Something a check needs of the target, declared once: its name, whether the probed target has it, and the
    reason the check is skipped when it does not."""

    name: str
    met: Callable[[Capabilities], bool] = attrs.field(eq=False)
    unmet: str


RESTART = Need(
    "restart",
    lambda target: target.can_restart,
    "needs --driver-cmd: the driver was already running, so the suite cannot restart it",
)
"""The suite starts the driver itself (``--driver-cmd``), so it can stop, kill and restart it."""
EMBEDDED = Need("embedded", lambda target: target.embedded, "needs the embedded API server (not --kubeconfig)")
"""The embedded API server is in use (it can be restarted, and restricted per node)."""
HEALTH = Need(
    "health",
    lambda target: target.health,
    "the driver does not serve the DRAResourceHealth service (health monitoring is optional)",
)
"""The driver serves the DRAResourceHealth service."""
REFERENCE = Need("reference", lambda target: target.reference, "needs the bundled reference driver's control socket")
"""The bundled reference driver: its control socket can flip fault knobs."""

CheckFunction = Callable[["CheckContext"], Awaitable[None]]


@attrs.frozen
class Citation:
    """The sentence a check enforces, word for word, and where it is written."""

    text: str
    source: str
    """``dra v1 api.proto, NodePrepareResourcesResponse.claims``, ``kubelet: cm/dra manager``, ``KEP-4381``."""

    def __str__(self) -> str:
        return f"“{self.text}” ({self.source})"


@attrs.frozen
class Check:
    id: str
    title: str
    tags: frozenset[str]
    level: str
    """``must`` or ``should``."""
    why: str
    """Why the level is what it is: what fails, and for whom, when a driver breaks the rule."""
    rule: Citation
    reference: str
    """Where a driver author reads about it: docs/ pages and public sources (``rules.cite``), each a docs/ path
    or a URL."""
    run: CheckFunction
    needs: frozenset[Need] = frozenset()
    first: bool = False
    """Runs before the others: what it checks, most others need (a claim the driver accepts), so its failure
    is reported once as their cause."""

    def unmet(self, target: Capabilities) -> str:
        """Why this check cannot run on ``target`` (the first need it lacks, by name); empty when it can."""
        return next((need.unmet for need in sorted(self.needs, key=lambda n: n.name) if not need.met(target)), "")

    def matches(self, pattern: re.Pattern[str]) -> bool:
        return bool(pattern.search(self.id) or pattern.search(self.title))


CHECKS: dict[str, Check] = {}


def check(
    check_id: str,
    title: str,
    *,
    tags: Iterable[str],
    level: str,
    why: str,
    rule: Citation,
    reference: str,
    needs: Iterable[Need] = (),
    first: bool = False,
) -> Callable[[CheckFunction], CheckFunction]:
    """Register the decorated function as check ``check_id``; ids, tags and levels are validated at import."""

    def register(function: CheckFunction) -> CheckFunction:
        if not ID_PATTERN.match(check_id):
            raise ValueError(f"check id {check_id!r} is not like REG-001")
        if check_id in CHECKS:
            raise ValueError(f"check id {check_id} is used twice")
        unknown = set(tags) - TAGS
        if unknown:
            raise ValueError(f"check {check_id}: unknown tags {sorted(unknown)}")
        if level not in LEVELS:
            raise ValueError(f"check {check_id}: level {level!r} is not one of {', '.join(LEVELS)}")
        CHECKS[check_id] = Check(
            check_id, title, frozenset(tags), level, why, rule, reference, function, frozenset(needs), first
        )
        return function

    return register
