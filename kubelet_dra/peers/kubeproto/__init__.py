"""The Kubernetes API types in protobuf, generated from ``proto/k8s``, and their JSON mapping.

The embedded API server speaks Kubernetes protobuf to client-go programs (DRA drivers on the
kubeletplugin helper, kube-scheduler, kube-controller-manager) through :mod:`.mapping`.
"""
