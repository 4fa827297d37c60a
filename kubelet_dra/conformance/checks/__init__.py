"""The checks, one module per area; importing this package registers them all."""

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
