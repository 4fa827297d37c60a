"""Many simulated nodes in one process: node name patterns, per-node layouts and drivers, the live table."""

from kubelet_dra.workbench.fleet import fleetview as view
from kubelet_dra.workbench.fleet.fleet import Fleet, NodeLayout, NodeRow
from kubelet_dra.workbench.fleet.nodenames import expand

__all__ = ["Fleet", "NodeLayout", "NodeRow", "expand", "view"]
