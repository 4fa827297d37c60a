"""The kubelet's plugin manager for DRA drivers: watcher, reconciler, handshake, diagnoses.

``PluginManager`` is the entry point; handlers for plugin types (the DRA plugin manager) are
passed in, so this package knows nothing about DRA services.
"""

from kubelet_dra.kubelet.pluginmanager.cache.types import PluginHandler
from kubelet_dra.kubelet.pluginmanager.diagnosis import FAILURE_MODES, REFUSALS, Diagnosis, FailureMode, classify
from kubelet_dra.kubelet.pluginmanager.operationexecutor.operation_generator import HandshakeTimeouts
from kubelet_dra.kubelet.pluginmanager.plugin_manager import PluginManager, SocketPhase, SocketState

__all__ = [
    "FAILURE_MODES",
    "REFUSALS",
    "Diagnosis",
    "FailureMode",
    "HandshakeTimeouts",
    "PluginHandler",
    "PluginManager",
    "SocketPhase",
    "SocketState",
    "classify",
]
