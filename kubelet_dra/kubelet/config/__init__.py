"""Where the kubelet's pods come from: the API server's pods bound to the node."""
