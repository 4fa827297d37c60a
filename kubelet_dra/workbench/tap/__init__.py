"""The recording proxy between a (real) kubelet and its drivers, and the diff of call records.

``Tap`` mirrors drivers' registration sockets into a kubelet's registry dir and forwards every
call, recording each in the ``--record-calls`` JSON-lines format; ``diff`` compares two such
recordings after normalizing what differs between runs (UIDs, names, paths, times). With ``WireFaults`` the tap
carries out the reference driver's wire fault knobs for any driver (``FaultProxy``: one driver's, for the testbed).
"""

from kubelet_dra.workbench.tap.diff import CallsDiff, diff
from kubelet_dra.workbench.tap.faultproxy import FaultProxy
from kubelet_dra.workbench.tap.faults import WIRE_KNOBS, WireFaults, unsupported
from kubelet_dra.workbench.tap.forward import OpenCall
from kubelet_dra.workbench.tap.mirror import MirrorView
from kubelet_dra.workbench.tap.proxy import Tap, default_socket_dir
from kubelet_dra.workbench.tap.tapthread import TapThread

__all__ = [
    "WIRE_KNOBS",
    "CallsDiff",
    "FaultProxy",
    "MirrorView",
    "OpenCall",
    "Tap",
    "TapThread",
    "WireFaults",
    "default_socket_dir",
    "diff",
    "unsupported",
]
