"""kubelet-dra: the kubelet's side of Kubernetes Dynamic Resource Allocation, against real DRA drivers."""

__version__ = "0.1.0"
