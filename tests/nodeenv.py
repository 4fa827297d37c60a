"""One test's node for the manager and pod tests: its name, short root dir, API client, drivers, claims and pods.

Everything is real: claims and pods live in the session's embedded API server, the reference driver
(``kubelet-dra driver``) runs as its own process and registers with a ``Node`` through a temp registry
dir, and the node talks to it over its Unix socket. A plain module rather than a ``conftest`` so tests
can import it by one unambiguous name whatever folders pytest collects.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from helpers import KubeletDRAProcess

from kubelet_dra.kubelet.cm.dra import Checkpoint, DRAManager
from kubelet_dra.kubelet.cm.dra.plugin import CallRecord
from kubelet_dra.kubelet.kubelet import Node, NodeOptions
from kubelet_dra.kubelet.pluginmanager import HandshakeTimeouts
from kubelet_dra.kubelet.pod_backoff import PodSyncPeriods
from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path

GPU = "gpu.example.com"
NIC = "nic.example.com"
NAMESPACE = "default"
RESOURCE = "resource.k8s.io"


def unique(prefix: str) -> str:
    """A name no other test uses: every test shares the session's API server."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class DriverProcess(KubeletDRAProcess):
    """``kubelet-dra driver`` as a subprocess, with its fault and health knobs at hand (they act on its plugin dir)."""

    def __init__(self, proc: asyncio.subprocess.Process, plugin_dir: Path) -> None:
        super().__init__(proc)
        self.plugin_dir = plugin_dir

    async def command(self, command: str, *args: str) -> None:
        """``kubelet-dra driver COMMAND --plugin-dir DIR ARGS`` against this driver; it has to succeed."""
        process = await KubeletDRAProcess.start("driver", command, "--plugin-dir", str(self.plugin_dir), *args)
        assert await process.wait() == 0, "\n".join(process.lines)

    async def fault(self, action: str, *knobs: str) -> None:
        """``kubelet-dra driver fault ACTION KNOBS``, e.g. ``fault("set", "prepare-error=no power")``."""
        await self.command("fault", action, *knobs)

    async def health(self, *args: str) -> None:
        """``kubelet-dra driver health ARGS``, e.g. ``health("device-0=Unhealthy", "--message", "ECC errors")``."""
        await self.command("health", *args)


class NodeEnv:
    """One test's node: its directories, the API server, drivers, claims and pods."""

    def __init__(self, root: Path, kube: KubeClient, kubeconfig: Path) -> None:
        self.root = root
        self.kube = kube
        self.kubeconfig = kubeconfig
        self.node_name = unique("node")
        self.registry = root / "reg"
        self.state_dir = root / "state"
        self.drivers: list[DriverProcess] = []

    async def close(self) -> None:
        """Stop every driver the test started (the fixture removes the directories afterwards)."""
        for driver in self.drivers:
            await driver.stop()

    @property
    def checkpoint(self) -> Checkpoint:
        """The DRA manager checkpoint in ``state_dir``, where both ``manager()`` and ``pod_node()`` keep it."""
        return Checkpoint(self.state_dir)

    @contextlib.asynccontextmanager
    async def node(self, **options: Any) -> AsyncIterator[Node]:
        """A node with these ``NodeOptions`` and short handshake timeouts, so a broken driver fails fast."""
        options.setdefault("handshake", HandshakeTimeouts(dial=1.0, get_info=1.0, notify=5.0))
        async with Node(
            self.node_name, str(self.registry), kubeconfig=str(self.kubeconfig), options=NodeOptions(**options)
        ) as node:
            yield node

    @contextlib.asynccontextmanager
    async def pod_node(self, **options: Any) -> AsyncIterator[Node]:
        """A node that runs its pods (checkpoint in ``state_dir``), retrying failed pod syncs after 0.2 s, its PLEG
        relisting every 0.2 s."""
        options.setdefault("state_dir", str(self.state_dir))
        options.setdefault("pod_sync", PodSyncPeriods(back_off_period=0.2, sync_frequency=0.2, relist_period=0.2))
        async with self.node(**options) as node:
            yield node

    def manager(self, node: Node, **options: Any) -> DRAManager:
        """A DRA manager of its own for ``node``, sharing the node's ``checkpoint``."""
        return DRAManager(node, self.checkpoint, **options)

    @staticmethod
    def calls(node: Node, method: str, driver: str | None = None) -> list[CallRecord]:
        """The calls ``node`` made with this method, to every driver or to ``driver``."""
        return node.recorder.records(driver=driver, method=method)

    @staticmethod
    def sent(record: CallRecord) -> list[str]:
        """The claim UIDs a recorded call sent, in request order."""
        return [claim["uid"] for claim in record.request["claims"]]

    async def spawn_driver(self, driver: str = GPU, *flags: str) -> DriverProcess:
        """Start the reference driver for this node and wait until it is serving, not until a node uses it
        (for a node that runs in another process)."""
        plugin_dir = self.root / f"p-{driver.split('.')[0]}"
        proc = await KubeletDRAProcess.spawn(
            *("driver", "--driver-name", driver, "--node-name", self.node_name, "--kubeconfig", str(self.kubeconfig)),
            *("--registry-dir", str(self.registry), "--plugin-dir", str(plugin_dir)),
            *("--cdi-root", str(self.root / "cdi"), *flags),
        )
        process = DriverProcess(proc, plugin_dir)
        self.drivers.append(process)
        await process.wait_line("driver started")
        return process

    async def start_driver(self, node: Node, driver: str = GPU, *flags: str) -> DriverProcess:
        """Start the reference driver for this node and wait until ``node`` can call it."""
        process = await self.spawn_driver(driver, *flags)
        await node.wait_for(lambda: node.plugins.usable(driver), timeout=20)
        return process

    def pod(
        self,
        claims: dict[str, str] | None = None,
        *,
        templates: dict[str, str | None] | None = None,
        containers: Sequence[dict[str, Any]] = (),
    ) -> dict[str, Any]:
        """A pod bound to this node, not created in the API server: ``claims`` maps pod claim name → claim
        name, ``templates`` pod claim name → the claim named in its status (``None``: intentionally not created)."""
        templates = templates or {}
        entries = [{"name": key, "resourceClaimName": name} for key, name in (claims or {}).items()]
        entries += [{"name": key, "resourceClaimTemplateName": "template"} for key in templates]
        return {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": unique("pod"), "namespace": NAMESPACE, "uid": str(uuid.uuid4())},
            "spec": {
                "nodeName": self.node_name,
                "resourceClaims": entries,
                "containers": list(containers) or [{"name": "main", "image": "busybox"}],
            },
            "status": {"resourceClaimStatuses": [{"name": k, "resourceClaimName": v} for k, v in templates.items()]},
        }

    async def claim(
        self,
        devices: Sequence[tuple[str, str, str]] | None = None,
        *,
        reserved_for: Sequence[dict[str, Any]] = (),
        owner: dict[str, Any] | None = None,
        allocate: bool = True,
        name: str | None = None,
        skips: Sequence[Sequence[str] | None] = (),
    ) -> dict[str, Any]:
        """A ResourceClaim allocated with ``devices`` (request, driver, device) in this node's pool, reserved
        for the pods given (the store drops status on create, so status is written with a status update).

        ``skips``: each device's ``skipNodeOperations`` (None: none), as the scheduler copies them from its slice."""
        devices = devices if devices is not None else [("gpu", GPU, "device-0")]
        requests = sorted({request for request, _, _ in devices}) or ["gpu"]
        metadata: dict[str, Any] = {"name": name or unique("claim")}
        if owner is not None:
            meta = owner["metadata"]
            metadata["ownerReferences"] = [
                {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"], "controller": True}
            ]
        spec = {"devices": {"requests": [{"name": r, "exactly": {"deviceClassName": "example"}} for r in requests]}}
        body = {"apiVersion": f"{RESOURCE}/v1", "kind": "ResourceClaim", "metadata": metadata, "spec": spec}
        path = api_path(RESOURCE, "v1", "resourceclaims", namespace=NAMESPACE)
        claim = await self.kube.request("POST", path, body=body)
        if not allocate:
            return claim
        results: list[dict[str, Any]] = [
            {"request": request, "driver": driver, "pool": self.node_name, "device": device}
            for request, driver, device in devices
        ]
        for result, skip in zip(results, skips, strict=False):
            if skip is not None:
                result["skipNodeOperations"] = list(skip)
        claim["status"] = {
            "allocation": {"devices": {"results": results}},
            "reservedFor": [
                {"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]}
                for pod in reserved_for
            ],
        }
        return await self.kube.request("PUT", f"{path}/{claim['metadata']['name']}/status", body=claim)

    async def pod_with_claim(self) -> dict[str, Any]:
        """A pod created in the API server, bound to this node, whose container uses a claim allocated
        device-0 and reserved for the pod.

        The pod exists (with its UID) before the reservation, so a node may see it first and retry."""
        claim_name = unique("claim")
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": unique("pod"), "namespace": NAMESPACE},
            "spec": {
                "nodeName": self.node_name,
                "resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}],
                "containers": [{"name": "main", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
            },
        }
        pod = await self.kube.request("POST", api_path("", "v1", "pods", namespace=NAMESPACE), body=pod)
        await self.claim([("gpu", GPU, "device-0")], reserved_for=[pod], name=claim_name)
        return pod

    async def get_pod(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        """The pod as the API server has it now; ``None`` once it is gone."""
        path = api_path("", "v1", "pods", namespace=NAMESPACE, name=pod["metadata"]["name"])
        try:
            return await self.kube.request("GET", path)
        except KubeApiError as err:
            if err.not_found:
                return None
            raise

    async def delete_pod(self, pod: dict[str, Any]) -> None:
        """Delete as ``kubectl delete pod`` does: gracefully, so the node has to finish it."""
        await self.kube.request("DELETE", api_path("", "v1", "pods", namespace=NAMESPACE, name=pod["metadata"]["name"]))

    async def events(self, pod: dict[str, Any]) -> list[dict[str, Any]]:
        """The events about ``pod``, matched by its UID."""
        listed = await self.kube.request("GET", api_path("", "v1", "events", namespace=NAMESPACE))
        return [e for e in listed["items"] if e["involvedObject"].get("uid") == pod["metadata"]["uid"]]
