"""The recording proxy between a (real) kubelet and its drivers, and the diff of call records.

``Tap`` mirrors drivers' registration sockets into a kubelet's registry dir and forwards every
call, recording each in the ``--record-calls`` JSON-lines format; ``diff`` compares two such
recordings after normalizing what differs between runs (UIDs, names, paths, times).
"""

from kubelet_dra.workbench.tap.diff import CallsDiff, diff
from kubelet_dra.workbench.tap.forward import OpenCall
from kubelet_dra.workbench.tap.mirror import MirrorView
from kubelet_dra.workbench.tap.proxy import Tap, default_socket_dir
from kubelet_dra.workbench.tap.tapthread import TapThread

__all__ = ["CallsDiff", "MirrorView", "OpenCall", "Tap", "TapThread", "default_socket_dir", "diff"]
