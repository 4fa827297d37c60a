"""The rest of Kubernetes the kubelet works with, and the libraries every side shares.

Programs on the other side of the kubelet's wires: ``apiserver`` (the embedded API server),
``controlplane`` (scheduler and claim controller, offline), ``driver`` (the reference DRA driver).
Libraries: ``api`` (the gRPC wire: DRA, registration, health), ``kube`` (the API client),
``kubeproto`` (the API types and their protobuf mapping), ``log``, ``errors``, ``gotext``. Nothing here
imports the kubelet or the workbench.
"""
