"""The Kubernetes API types in protobuf, generated from ``proto/k8s``, and their JSON mapping.

The embedded API server speaks Kubernetes protobuf to client-go programs (DRA drivers on the
kubeletplugin helper, kube-scheduler, kube-controller-manager) through :mod:`.mapping`.
"""

# Importing registers each module's descriptors in the default pool, where mapping finds a kind by name;
# the groups a kubelet needs beyond core/v1 and resource.k8s.io are registered here.
from kubelet_dra.kubeproto import coordination_v1_pb2, node_v1_pb2, storage_v1_pb2  # noqa: F401
