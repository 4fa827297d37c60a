"""Talking to a Kubernetes API server from asyncio code.

``config`` builds a client from a kubeconfig (or in-cluster credentials), ``client`` runs the
official synchronous ``kubernetes`` client in worker threads so the event loop never blocks, and
``resource`` reads ``resource.k8s.io`` objects whichever API version the server serves.
"""
