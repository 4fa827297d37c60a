"""The pods bound to one node, as the kubelet runs them as far as DRA goes.

``source`` lists and watches them (the kubelet's pod config), ``workers`` runs one worker per pod
(prepare, start, stop, unprepare, final delete), ``backoff`` says when a worker syncs its pod again,
``status`` builds the statuses the real kubelet writes on the way, ``devices`` the containers'
``allocatedResourcesStatus``, and ``history`` puts a pod's status history in a normalized form that
compares between kubelets as a diff.
"""

from kubelet_dra.pods.backoff import PodSyncPeriods
from kubelet_dra.pods.devices import HealthLookup
from kubelet_dra.pods.workers import PodWorkers

__all__ = ["HealthLookup", "PodSyncPeriods", "PodWorkers"]
