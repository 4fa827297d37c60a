"""The DRA plugin manager: registration handler, instance store, gRPC clients, call recorder, health.

``DRAPluginManager`` is handed to the registration package as the handler for ``DRAPlugin``
sockets; the node and the DRA manager call drivers through ``get_plugin(name).client``.
"""

from kubelet_dra.kubelet.cm.dra.healthinfo import DeviceHealth, Health, HealthCache
from kubelet_dra.kubelet.cm.dra.plugin.client import DEFAULT_CALL_TIMEOUT, DRAClient
from kubelet_dra.kubelet.cm.dra.plugin.dra_plugin import PluginInstance
from kubelet_dra.kubelet.cm.dra.plugin.dra_plugin_manager import (
    PLUGIN_TYPE,
    DRAPluginManager,
    PluginRejected,
)
from kubelet_dra.kubelet.cm.dra.plugin.options import DEFAULT_HEALTH_RESTART_DELAY, PluginMap, PluginOptions
from kubelet_dra.kubelet.cm.dra.plugin.wipes import DEFAULT_WIPING_DELAY
from kubelet_dra.peers.api.calls import CallRecord, CallRecorder
from kubelet_dra.peers.errors import DriverNotRegistered

__all__ = [
    "DEFAULT_CALL_TIMEOUT",
    "DEFAULT_HEALTH_RESTART_DELAY",
    "DEFAULT_WIPING_DELAY",
    "PLUGIN_TYPE",
    "CallRecord",
    "CallRecorder",
    "DRAClient",
    "DRAPluginManager",
    "DeviceHealth",
    "DriverNotRegistered",
    "Health",
    "HealthCache",
    "PluginInstance",
    "PluginMap",
    "PluginOptions",
    "PluginRejected",
]
