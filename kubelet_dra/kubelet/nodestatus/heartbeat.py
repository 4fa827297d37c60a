"""Registering the Node and keeping it alive, as the kubelet's node status manager and lease controller do.

Where the API server serves Leases, the Lease is the heartbeat: renewed every period from the copy the
last write returned (one PUT; a GET only when there is no copy or a write failed), while the status is
posted only when it changed or every ``STATUS_REPORT_PERIOD`` (the kubelet's ``nodeStatusReportFrequency``).
That is one request per node per beat, as a kubelet makes, where three made a thousand nodes queue
behind their own heartbeats. Without Leases (the embedded API server) the status is the heartbeat.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kubelet_dra.kubelet.nodestatus.setters import (
    HEARTBEAT_PERIOD,
    LEASE_NAMESPACE,
    STATUS_REPORT_PERIOD,
    NodeShape,
    lease_manifest,
    node_manifest,
    node_status,
)
from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path
from kubelet_dra.peers.log import Logger, get_logger

NODES = api_path("", "v1", "nodes")
LEASES = api_path("coordination.k8s.io", "v1", "leases", namespace=LEASE_NAMESPACE)
HEARTBEAT_THREAD_COUNT = 128
HEARTBEAT_THREADS = ThreadPoolExecutor(max_workers=HEARTBEAT_THREAD_COUNT, thread_name_prefix="heartbeat")
"""Every node's heartbeat requests go from these threads (started as needed: one node starts one), not the
loop's default ones: a kubelet's heartbeats have a client of their own, and a thousand nodes' pods must not delay
their Leases. A thousand nodes renew a hundred Leases a second and each request mostly waits for the server, so the
threads keep up while an answer takes up to 1.28 s: with sixteen, answers slower than 0.16 s (a server busy placing
a thousand pods) made the renewals queue here until 300 of 1,000 nodes went NotReady."""


class NodeHeartbeat:
    """The node's object in the API server: created (or adopted) with a kubelet's status, then every
    ``period`` its status heartbeat and its Lease renewed. Failures are logged and retried on the next beat:
    a kubelet keeps running while its API server is away."""

    def __init__(
        self,
        kube: KubeClient,
        name: str,
        shape: NodeShape,
        *,
        kubelet_version: str,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]],
        period: float = HEARTBEAT_PERIOD,
        log: Logger | None = None,
        on_beat: Callable[[], None] = lambda: None,
    ) -> None:
        self._kube = kube
        self._name = name
        self._shape = shape
        self._version = kubelet_version
        self._clock = clock
        self._sleep = sleep
        self._period = period
        self._on_beat = on_beat
        self._log = log or get_logger("node-status", node=name)
        self._since = clock()
        self._uid = ""
        self._leases = True
        """False once the API server turned out not to serve coordination.k8s.io Leases."""
        self._lease: dict[str, Any] | None = None
        """The Lease as the last write (or read) returned it: the next renewal starts from it."""
        self._reported: tuple[float, Any] | None = None
        """When the status was last posted, and what it said (heartbeat times aside)."""
        self.beats = 0
        """Heartbeats posted, for people and tests watching the node."""

    async def register(self) -> None:
        """Create the Node as the node starts, or adopt the one there (a restarted kubelet, or a node object made
        beforehand). A refusal (403) is raised: what refuses this Node (an admission policy such as deploy/'s, which
        lets the fleet register only its simulated nodes) refuses its heartbeats too, so the node would never be
        Ready; any other failure is retried with the heartbeats."""
        try:
            await self._create()
        except KubeApiError as err:
            if err.forbidden:
                raise
            self._retrying(err)

    def _retrying(self, err: KubeApiError) -> None:
        self._log.warning("Cannot create the Node object; retrying with the heartbeats", err=str(err))

    async def _create(self) -> None:
        manifest = node_manifest(self._name, self._shape, self._version, self._clock(), self._since)
        try:
            created = await self._kube.request("POST", NODES, body=manifest)
        except KubeApiError as err:
            if not err.conflict:
                raise
            self._log.info("Adopted existing Node object")
            await self.beat()
            return
        self._uid = created["metadata"]["uid"]
        self._log.info("Registered Node object", cpu=self._shape.cpu, memory=self._shape.memory, pods=self._shape.pods)

    async def run(self) -> None:
        """Beat every period until cancelled."""
        while True:
            await self._sleep(self._period)
            await self.beat()

    async def beat(self) -> None:
        """One Lease renewal, and the status when it is due (every beat where there are no Leases)."""
        now = self._clock()
        status = node_status(self._name, self._shape, self._version, now, self._since)
        if self._status_due(now, status):
            await self._post_status(now, status)
        elif self._leases:
            await self._renew_lease(now)
            self.beats += 1
            self._on_beat()

    def _status_due(self, now: float, status: dict[str, Any]) -> bool:
        if not self._leases or self._reported is None or not self._uid:
            return True
        at, said = self._reported
        return now - at >= STATUS_REPORT_PERIOD or said != _without_heartbeats(status)

    async def _post_status(self, now: float, status: dict[str, Any]) -> None:
        patch = {"status": status}
        try:
            node = await self._kube.request(
                "PATCH",
                f"{NODES}/{self._name}/status",
                body=patch,
                content_type="application/merge-patch+json",
                executor=HEARTBEAT_THREADS,
            )
            self._uid = node["metadata"]["uid"]
            self._reported = (now, _without_heartbeats(status))
            self.beats += 1
            self._on_beat()
        except KubeApiError as err:
            if err.not_found:  # deleted while the node runs: create it again, as a kubelet does
                try:
                    await self._create()
                except KubeApiError as again:
                    self._retrying(again)
            else:
                self._log.warning("Cannot post the node status", err=str(err))
            return
        if self._leases:
            await self._renew_lease(now)

    async def _renew_lease(self, now: float) -> None:
        lease = lease_manifest(self._name, self._uid, now)
        current = self._lease
        if current is None:
            try:
                current = await self._kube.request("GET", f"{LEASES}/{self._name}", executor=HEARTBEAT_THREADS)
            except KubeApiError as err:
                if err.not_found:
                    await self._create_lease(lease)
                else:
                    self._log.warning("Cannot read the node Lease", err=str(err))
                return
        renewed: dict[str, Any] = {**current, "spec": {**current.get("spec", {}), **lease["spec"]}}
        try:
            self._lease = await self._kube.request(
                "PUT", f"{LEASES}/{self._name}", body=renewed, executor=HEARTBEAT_THREADS
            )
        except KubeApiError as err:
            self._lease = None  # read it again next time (a conflict: someone else wrote it)
            self._log.warning("Cannot renew the node Lease", err=str(err))

    async def _create_lease(self, lease: dict[str, Any]) -> None:
        try:
            self._lease = await self._kube.request("POST", LEASES, body=lease, executor=HEARTBEAT_THREADS)
        except KubeApiError as err:
            if err.not_found:  # the Lease kind itself is missing, as on the embedded API server
                self._leases = False
                self._log.info(
                    "The API server serves no coordination.k8s.io Leases; status heartbeats keep the node Ready"
                )
            else:
                self._log.warning("Cannot create the node Lease", err=str(err))


def _without_heartbeats(status: dict[str, Any]) -> dict[str, Any]:
    """The status less its conditions' heartbeat times: what a change of the node's state is judged on (a shallow
    copy: a thousand nodes judge theirs a hundred times a second)."""
    conditions = [
        {key: value for key, value in condition.items() if key != "lastHeartbeatTime"}
        for condition in status.get("conditions", ())
    ]
    return {**status, "conditions": conditions}
