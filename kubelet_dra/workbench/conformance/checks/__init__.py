"""The checks, one module per area; importing this package registers them all, so :func:`all_checks` lives here
(the framework below it only keeps the registry)."""

from kubelet_dra.workbench.conformance.checks import cdi_checks as cdi  # noqa: F401  (importing registers the checks)
from kubelet_dra.workbench.conformance.checks import health_checks as health  # noqa: F401  (importing registers the checks)
from kubelet_dra.workbench.conformance.checks import lifecycle, prepare, unprepare, versions  # noqa: F401  (importing registers the checks)
from kubelet_dra.workbench.conformance.checks import registration_checks as registration  # noqa: F401  (importing registers the checks)
from kubelet_dra.workbench.conformance.checks import slice_checks as slices  # noqa: F401  (importing registers the checks)
from kubelet_dra.workbench.conformance.framework import CHECKS, Check


def all_checks() -> list[Check]:
    """Every check, in id order."""
    return [CHECKS[key] for key in sorted(CHECKS)]
