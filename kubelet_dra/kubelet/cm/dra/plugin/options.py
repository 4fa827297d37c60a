"""How the DRA plugin manager behaves: the kubelet's settings, and the older kubelets this tool can also emulate.

One frozen object, so the handler's constructor takes the node's parts and this, and a new setting is one
documented field here rather than one more parameter.
"""

from __future__ import annotations

import enum

import attrs

from kubelet_dra.kubelet.cm.dra.plugin.client import DEFAULT_CALL_TIMEOUT
from kubelet_dra.kubelet.cm.dra.plugin.wipes import DEFAULT_WIPING_DELAY
from kubelet_dra.kubelet.release import DEFAULT_RELEASE, KubeletRelease

DEFAULT_HEALTH_RESTART_DELAY = 5.0


class PluginMap(enum.StrEnum):
    """How registered instances are kept per driver name."""

    INSTANCES = "instances"
    """The kubelet's since 1.33: every instance, keyed by endpoint; a duplicate endpoint is rejected."""
    REPLACE = "replace"
    """The ≤1.32 kubelet's: one entry per driver name, a new registration replaces it, deregistration goes by
    name alone (an older kubelet this tool emulates; the real kubelet 1.36 has no such mode)."""


@attrs.frozen
class PluginOptions:
    """The plugin manager's settings; the defaults are the kubelet's."""

    release: KubeletRelease = DEFAULT_RELEASE
    """The kubelet release whose registration and health behaviour the handler has."""
    wiping_delay: float = DEFAULT_WIPING_DELAY
    """How long a driver may have no connected instance before its ResourceSlices are wiped."""
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    """The deadline of each prepare and unprepare call."""
    health_restart_delay: float = DEFAULT_HEALTH_RESTART_DELAY
    """How long after a health stream ends it is opened again."""
    plugin_map: PluginMap = PluginMap.INSTANCES
    """An older kubelet this tool emulates: ``PluginMap.REPLACE`` is the ≤1.32 kubelet's."""
    legacy_services: bool = False
    """An older kubelet this tool emulates: the ≤1.32 service identifiers, the fall back to v1alpha4 (``1.0.0``),
    and that kubelet's texts for a plugin whose versions are refused."""
