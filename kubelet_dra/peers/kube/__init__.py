"""Talking to a Kubernetes API server from asyncio code.

``config`` reads a kubeconfig (or in-cluster credentials) into an ``apiconfig.ApiConfig``, ``client``
sends JSON requests and watches over the event loop's kept-alive connections (``keepalive``, ``http1``),
the official ``kubernetes`` client (``official``) loading only the kubeconfigs and carrying only the
proxied requests nothing else can, and ``resource`` reads ``resource.k8s.io`` objects whichever API
version the server serves.
"""
