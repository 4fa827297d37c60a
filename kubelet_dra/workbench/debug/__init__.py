"""The live registration debugger: a node that registers drivers like the kubelet, and says what is wrong.

``DebugSession`` watches a ``Node``; its ``Report`` holds the registration sockets and their phase,
the driver instances and their connections, the other sockets found on the machine, the driver
names the cluster uses, a timeline, and the problems with their fixes. ``explain`` does the same
for log lines copied from a real kubelet or driver. A call made by hand (``kubelet-dra call``) is
``kubelet_dra.workbench.call``'s.
"""

from kubelet_dra.workbench.debug.debugreport import Problem, Report, render
from kubelet_dra.workbench.debug.explain import Explanation, explain
from kubelet_dra.workbench.debug.inventory import FoundSocket, Liveness, default_elsewhere, inventory
from kubelet_dra.workbench.debug.session import DebugSession

__all__ = [
    "DebugSession",
    "Explanation",
    "FoundSocket",
    "Liveness",
    "Problem",
    "Report",
    "default_elsewhere",
    "explain",
    "inventory",
    "render",
]
