"""The kubelet, as far as DRA goes, laid out like ``pkg/kubelet``: a module here has its Go twin at the same path.

``kubelet.py`` composes one node (``Node``, ``NodeOptions``); ``pluginmanager/`` watches the registry
dir and registers plugins; ``cm/dra/`` is the DRA manager with its plugin handler (``plugin/``) and
checkpoint (``state/``); ``pod_workers.py`` runs the pods (``pod_backoff.py``: when a pod is synced
again), ``config/apiserver.py`` lists and watches them, ``status/generate.py`` and ``kubelet_pods.py``
write their statuses; ``nodestatus/`` keeps the Node object; ``metrics/``, ``release.py`` (what differs
between kubelet releases), ``permissions.py`` (what the node may do in the API) and ``wait.py``
(apimachinery's back-off) complete it. It imports only the libraries of ``kubelet_dra.peers``.
"""
