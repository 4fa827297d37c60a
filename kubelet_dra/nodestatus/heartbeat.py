"""Registering the Node and keeping it alive, as the kubelet's node status manager and lease controller do."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from kubelet_dra.kube.client import KubeApiError, KubeClient, api_path
from kubelet_dra.log import Logger, get_logger
from kubelet_dra.nodestatus.status import (
    HEARTBEAT_PERIOD,
    LEASE_NAMESPACE,
    NodeShape,
    lease_manifest,
    node_manifest,
    node_status,
)

NODES = api_path("", "v1", "nodes")
LEASES = api_path("coordination.k8s.io", "v1", "leases", namespace=LEASE_NAMESPACE)


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
        self.beats = 0
        """Heartbeats posted, for people and tests watching the node."""

    async def register(self) -> None:
        """Create the Node, or adopt the one there (a restarted kubelet, or a node object made beforehand)."""
        manifest = node_manifest(self._name, self._shape, self._version, self._clock(), self._since)
        try:
            created = await self._kube.request("POST", NODES, body=manifest)
        except KubeApiError as err:
            if not err.conflict:
                self._log.warning("Cannot create the Node object; retrying with the heartbeats", err=str(err))
                return
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
        """One status heartbeat and one Lease renewal."""
        now = self._clock()
        patch = {"status": node_status(self._name, self._shape, self._version, now, self._since)}
        try:
            node = await self._kube.request(
                "PATCH", f"{NODES}/{self._name}/status", body=patch, content_type="application/merge-patch+json"
            )
            self._uid = node["metadata"]["uid"]
            self.beats += 1
            self._on_beat()
        except KubeApiError as err:
            if err.not_found:
                await self.register()
            else:
                self._log.warning("Cannot post the node status", err=str(err))
            return
        if self._leases:
            await self._renew_lease(now)

    async def _renew_lease(self, now: float) -> None:
        lease = lease_manifest(self._name, self._uid, now)
        try:
            current = await self._kube.request("GET", f"{LEASES}/{self._name}")
        except KubeApiError as err:
            if err.not_found:
                await self._create_lease(lease)
            else:
                self._log.warning("Cannot read the node Lease", err=str(err))
            return
        renewed: dict[str, Any] = {**current, "spec": {**current.get("spec", {}), **lease["spec"]}}
        try:
            await self._kube.request("PUT", f"{LEASES}/{self._name}", body=renewed)
        except KubeApiError as err:
            self._log.warning("Cannot renew the node Lease", err=str(err))

    async def _create_lease(self, lease: dict[str, Any]) -> None:
        try:
            await self._kube.request("POST", LEASES, body=lease)
        except KubeApiError as err:
            if err.not_found:  # the Lease kind itself is missing, as on the embedded API server
                self._leases = False
                self._log.info(
                    "The API server serves no coordination.k8s.io Leases; status heartbeats keep the node Ready"
                )
            else:
                self._log.warning("Cannot create the node Lease", err=str(err))
