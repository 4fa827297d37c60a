"""The kubelet's DRA metrics and the endpoint that serves them."""
