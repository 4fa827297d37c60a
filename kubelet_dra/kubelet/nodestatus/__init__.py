"""The Node object a kubelet keeps: registered with the status a scheduler needs, kept alive by heartbeats.

A real control plane schedules pods only onto a Node with capacity, allocatable and a Ready
condition, and its node lifecycle controller taints a node ``unreachable`` when neither the node's
status nor its Lease in ``kube-node-lease`` has been renewed within the grace period.
"""

from kubelet_dra.kubelet.nodestatus.heartbeat import NodeHeartbeat
from kubelet_dra.kubelet.nodestatus.setters import HEARTBEAT_PERIOD, TAINT_EFFECTS, NodeShape

__all__ = ["HEARTBEAT_PERIOD", "TAINT_EFFECTS", "NodeHeartbeat", "NodeShape"]
