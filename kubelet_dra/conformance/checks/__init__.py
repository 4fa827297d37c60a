"""The checks, one module per area; importing this package registers them all, so :func:`all_checks` lives here
(the framework below it only keeps the registry)."""

from kubelet_dra.conformance.checks import (  # noqa: F401  (importing registers the checks)
    cdi,
    health,
    lifecycle,
    prepare,
    registration,
    slices,
    unprepare,
    versions,
)
from kubelet_dra.conformance.framework import CHECKS, Check


def all_checks() -> list[Check]:
    """Every check, in id order."""
    return [CHECKS[key] for key in sorted(CHECKS)]
