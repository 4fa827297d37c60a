"""The kubelet release kubelet-dra emulates, and every difference between releases, decided here only.

Driver authors test against the current kubelet and against the older ones their users still run;
the DRA side of 1.36 and 1.37 differs in what drivers can observe
(docs/releases.md#what-137-does-differently). Code that behaves differently by release asks the
``KubeletRelease`` it was given about the one behaviour it implements, never about a version number, so a
release is one row of this table.
"""

from __future__ import annotations

import attrs

from kubelet_dra.peers.errors import UsageError


@attrs.frozen
class KubeletRelease:
    """One kubelet release's DRA behaviour."""

    name: str
    """``1.36``, ``1.37``: what ``--kubelet-version`` and a scenario's ``kubeletVersion`` take."""
    version: str
    """The exact version the node reports in ``nodeInfo.kubeletVersion``."""
    health_services: tuple[str, ...]
    """Health services the kubelet negotiates, in its preference order; empty: no negotiation, as in 1.36,
    whose kubelet opens a v1alpha1 health stream on every instance whatever the driver advertises."""
    stop_health_on_unimplemented: bool
    """A health stream answered UNIMPLEMENTED is not retried until the driver registers again."""
    unprepare_names_from_cache: bool
    """Unprepare takes a pod's claim names from the claim cache first, the pod's spec and status second."""
    unprepare_needs_pod_reference: bool
    """A cached claim that does not reference the pod is not unprepared for it."""
    prepare_refuses_unpreparing: bool
    """A prepare finding its claim being unprepared fails (and is retried) instead of joining it."""
    optional_node_operations: bool
    """The ``DRAOptionalNodeOperations`` gate exists (alpha, off unless turned on)."""
    prepare_replaces_devices: bool
    """A driver's prepare answer replaces its devices for the claim (docs/releases.md, backported after v1.36.2);
    v1.36.2 appends them, so a claim prepared again after a restart holds each device twice
    (docs/protocol.md#dra-manager)."""

    @property
    def negotiates_health(self) -> bool:
        return bool(self.health_services)


V1_36 = KubeletRelease(
    name="1.36",
    version="v1.36.2",
    health_services=(),
    stop_health_on_unimplemented=False,
    unprepare_names_from_cache=False,
    unprepare_needs_pod_reference=False,
    prepare_refuses_unpreparing=False,
    optional_node_operations=False,
    prepare_replaces_devices=False,
)
V1_37 = KubeletRelease(
    name="1.37",
    version="v1.37.0",
    health_services=("v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"),
    stop_health_on_unimplemented=True,
    unprepare_names_from_cache=True,
    unprepare_needs_pod_reference=True,
    prepare_refuses_unpreparing=True,
    optional_node_operations=True,
    prepare_replaces_devices=True,
)
RELEASES: dict[str, KubeletRelease] = {release.name: release for release in (V1_36, V1_37)}
DEFAULT_RELEASE = V1_37
"""The current release: a driver author testing today expects today's kubelet."""


def release(name: str, *, where: str = "--kubelet-version") -> KubeletRelease:
    """The release called ``name`` (``1.37``, ``v1.37``, ``v1.37.0`` alike); a usage error listing the choices."""
    short = name.strip().removeprefix("v")
    short = ".".join(short.split(".")[:2])
    if short not in RELEASES:
        raise UsageError(
            f"kubelet-dra does not emulate kubelet {name!r}",
            where=where,
            fix=f"give one of {', '.join(RELEASES)} (default {DEFAULT_RELEASE.name})",
        )
    return RELEASES[short]
