"""One kubelet gRPC call made by hand (``kubelet-dra call``): the request, the route the kubelet would take,
the raw call, and what the answer means."""
