"""The kubelet's plugin manager for DRA drivers: watcher, reconciler, handshake, diagnoses.

``PluginManager`` is the entry point; handlers for plugin types (the DRA plugin manager) are
passed in, so this package knows nothing about DRA services.
"""

from kubelet_dra.registration.diagnosis import FAILURE_MODES, REFUSALS, Diagnosis, FailureMode, classify
from kubelet_dra.registration.handler import PluginHandler
from kubelet_dra.registration.handshake import HandshakeTimeouts
from kubelet_dra.registration.manager import PluginManager, SocketPhase, SocketState

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
