"""The DRA plugin manager: registration handler, instance store, gRPC clients, call recorder, health.

``DRAPluginManager`` is handed to the registration package as the handler for ``DRAPlugin``
sockets; the node and the DRA manager call drivers through ``get_plugin(name).client``.
"""

from kubelet_dra.api.calls import CallRecord, CallRecorder
from kubelet_dra.plugins.client import DEFAULT_CALL_TIMEOUT, DRAClient
from kubelet_dra.plugins.health import DeviceHealth, Health, HealthCache
from kubelet_dra.plugins.instance import PluginInstance
from kubelet_dra.plugins.manager import (
    DEFAULT_HEALTH_RESTART_DELAY,
    PLUGIN_TYPE,
    DRAPluginManager,
    DriverNotRegistered,
    PluginMap,
    PluginRejected,
)
from kubelet_dra.plugins.wipes import DEFAULT_WIPING_DELAY

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
    "PluginRejected",
]
