"""Which DRA services the driver serves and advertises for each value of the ``versions`` knob.

Apart from the service socket so that what the knob means can be read without the driver's preparer and API
client: the tap carries out the same knob on the wire for any driver (``kubelet_dra.workbench.tap.faults``).
"""

from __future__ import annotations

from kubelet_dra.peers.api.services import (
    DRA_HEALTH_V1,
    DRA_HEALTH_V1ALPHA1,
    DRA_V1,
    DRA_V1ALPHA4,
    DRA_V1BETA1,
    Service,
)

SERVED: dict[str, tuple[Service, ...]] = {
    "all": (DRA_V1, DRA_V1BETA1),
    "v1": (DRA_V1,),
    "v1beta1": (DRA_V1BETA1,),
    "v1alpha4": (DRA_V1ALPHA4,),
    "1.0.0": (DRA_V1ALPHA4,),
    "none": (DRA_V1, DRA_V1BETA1),
}
"""DRA node services served for each value of the ``versions`` knob."""


HEALTH_ADVERTISED: dict[str, tuple[Service, ...]] = {
    "both": (DRA_HEALTH_V1, DRA_HEALTH_V1ALPHA1),
    "v1": (DRA_HEALTH_V1,),
    "v1alpha1": (DRA_HEALTH_V1ALPHA1,),
    "none": (),
}
"""Health services advertised for each value of the ``health-advertise`` knob."""


def advertised_versions(versions: str, *, health: str | None) -> list[str]:
    """``PluginInfo.supported_versions`` for a ``versions`` knob value, in the helper's order; ``health`` is the
    ``health-advertise`` knob's value, ``None`` for a driver without the health service."""
    if versions == "none":
        return []
    if versions == "1.0.0":
        return ["1.0.0"]
    advertised = [service.advertised for service in SERVED[versions]]
    if health is not None and not any(service.legacy for service in SERVED[versions]):
        advertised += [service.advertised for service in HEALTH_ADVERTISED[health]]
    return advertised
