"""The bundled reference DRA driver: a real kubelet plugin, in Python, with fault knobs.

It talks to the rest of kubelet-dra only over Unix-socket gRPC and the Kubernetes API, exactly
like a Go driver built on ``k8s.io/dynamic-resource-allocation/kubeletplugin``, so kubelet-dra
can demonstrate and test itself with it, and prove its checks catch real mistakes.
"""
