"""What a cluster's control plane does for DRA, for offline mode.

``ControlPlane`` watches pods, claims and ResourceSlices over HTTP and runs two controllers:
the claim controller (claims from templates, ``reservedFor`` bookkeeping, clean-up) and the
allocator (devices from published ResourceSlices, selected with CEL). Both talk to the API
server only through ``kubelet_dra.peers.kube``, exactly like kube-controller-manager and the scheduler.
"""

from kubelet_dra.peers.controlplane.allocator import Allocation, Unsatisfiable, allocate
from kubelet_dra.peers.controlplane.controller import ControlPlane
from kubelet_dra.peers.controlplane.names import claim_generate_name

__all__ = ["Allocation", "ControlPlane", "Unsatisfiable", "allocate", "claim_generate_name"]
