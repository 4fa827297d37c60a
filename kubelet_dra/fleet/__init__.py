"""Many simulated nodes in one process: node name patterns, per-node layouts and drivers, the live table."""

from kubelet_dra.fleet import view
from kubelet_dra.fleet.fleet import Fleet, NodeLayout, NodeRow
from kubelet_dra.fleet.names import expand

__all__ = ["Fleet", "NodeLayout", "NodeRow", "expand", "view"]
