"""The tools built on the kubelet and its peers: what a driver author runs.

``testbed`` stages a node with its API server, control plane and drivers; ``realnode`` stages the
real kubelet (or its DRA manager); ``conformance`` certifies a driver; ``scenarios`` replays YAML
scenarios; ``fidelity`` compares both kubelets; ``debug`` watches registration live; ``call`` makes
one gRPC call by hand; ``tap`` records a real kubelet's calls; ``fleet`` runs many nodes; ``demo``
shows it all at once.
"""
