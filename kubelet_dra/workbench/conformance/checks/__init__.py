"""The checks, one module per area; importing this package registers them all, so :func:`all_checks` lives here
(the framework below it only keeps the registry)."""

from kubelet_dra.workbench.conformance.checks import (  # noqa: F401  (importing registers the checks)
    cdi_checks,
    health_checks,
    lifecycle,
    prepare,
    registration_checks,
    slice_checks,
    unprepare,
    versions,
)
from kubelet_dra.workbench.conformance.framework import CHECKS, Check


def all_checks() -> list[Check]:
    """Every check, in id order."""
    return [CHECKS[key] for key in sorted(CHECKS)]
