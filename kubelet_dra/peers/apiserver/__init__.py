"""The embedded Kubernetes API server: a peer of kubelet-dra reached only over HTTP(S)."""
