"""``PodWorkers``: the kubelet's pod workers, as far as DRA sees them, for the pods bound to one node.

Each pod gets a worker that, like the kubelet's, reports it Pending with its containers waiting,
prepares its claims, then "starts" it (there are no containers: starting means asking the manager
for each container's CDI devices) and reports it Running (``kubelet_dra.kubelet.status.generate``). A failed
prepare gets a Warning Event ``FailedPrepareDynamicResources`` and leaves the pod Pending: the real
kubelet counts that sync as done, so the pod is tried again at its next periodic sync, or at once
when the pod changes. Once the pod is being deleted or has a terminal phase, its claims are
unprepared; a failed unprepare is an error of the sync, retried after the back-off while the pod
shows its containers stopped. A deleted pod then gets its terminal status and, at its worker's next
sync (the terminated one), its deletion is finished with grace period 0; a pod that reached Succeeded
or Failed by itself keeps its object. Every sync but a worker's first waits for the node's next PLEG
relist, as the kubelet's do; when each sync comes is ``kubelet_dra.kubelet.pod_backoff``'s only.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
from collections.abc import Callable, Mapping
from typing import Any

from kubelet_dra.kubelet.cm.dra import DRAManager, PrepareError, UnprepareError
from kubelet_dra.kubelet.config.apiserver import PodSource, finished
from kubelet_dra.kubelet.kubelet_pods import HealthLookup, allocated_resources
from kubelet_dra.kubelet.pod_backoff import CONTAINER_STOP_TIME, PodSyncPeriods, RelistClock
from kubelet_dra.kubelet.status.generate import now, pending_status, running_status, stopped_status
from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path, object_key
from kubelet_dra.peers.kube.events import PodEventReporter
from kubelet_dra.peers.log import Logger, get_logger

FAILED_PREPARE_REASON = "FailedPrepareDynamicResources"


class PodWorkers:
    """Watches the node's pods and runs one worker task per pod UID (see the module docstring)."""

    def __init__(
        self,
        kube: KubeClient,
        node_name: str,
        manager: DRAManager,
        *,
        health: HealthLookup,
        periods: PodSyncPeriods | None = None,
        rng: random.Random | None = None,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self._kube = kube
        self.manager = manager
        self._health = health
        self._periods = periods or PodSyncPeriods()
        self.relists = RelistClock(self._periods.relist_period)
        """The node's PLEG relists, which every sync of a pod but its first waits for."""
        self._rng = rng or random.Random()
        self._on_change = on_change
        self._log = get_logger("pod-workers", node=node_name)
        self._source = PodSource(kube, node_name, seen=self._seen, gone=self._gone, synced=self._synced)
        self._wake: dict[str, asyncio.Event] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._events = PodEventReporter(kube, {"component": "kubelet", "host": node_name})
        self.started: set[str] = set()
        """UIDs of pods whose claims are prepared and that were reported Running."""
        self._stopped: set[str] = set()
        """UIDs of deleted pods that were unprepared and given their terminal status: their next sync is the
        terminated one, which finishes the deletion."""
        self.last_error = ""
        """The latest failed prepare, unprepare or final delete, for status views ("" while none failed)."""

    def start(self) -> None:
        self._tasks.append(asyncio.create_task(self.relists.run(), name="PLEG relists"))
        self._tasks.append(asyncio.create_task(self._source.run(), name="pod watch"))

    async def stop(self) -> None:
        tasks = [*self._tasks, *self._workers.values()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    def refresh(self) -> None:
        """Wake the workers of running pods, e.g. after device health changed, to re-report their status.

        Pods waiting for a retry keep waiting, a pod whose unprepare failed included (the real kubelet unprepares it at
        its next back-off retry after its driver is back, not when the driver registers).
        """
        for uid in self.started:
            if (pod := self._source.pods.get(uid)) is not None and not finished(pod):
                self._wake[uid].set()

    def active_pod_uids(self) -> set[str]:
        """The kubelet's active pods (the reconcile loop unprepares all others): known pods whose worker has not
        finished with them. As in the kubelet's ``filterOutInactivePods``, a pod being deleted or gone terminal stays
        active while its worker unprepares it, so the reconcile loop never unprepares its claims a second time beside
        the worker; a pod gone from the API is not active."""
        return {uid for uid in self._source.pods if uid in self._workers}

    # --- the pod source's news ---

    def _synced(self) -> None:
        """The reconcile loop starts once the pod source has synced."""
        self._tasks.append(asyncio.create_task(self.manager.reconcile_loop(self.active_pod_uids), name="reconcile"))

    def _seen(self, pod: dict[str, Any], changed: bool) -> None:
        uid = pod["metadata"]["uid"]
        wake = self._wake.setdefault(uid, asyncio.Event())
        if changed:
            wake.set()
        if uid not in self._workers:
            self._workers[uid] = asyncio.create_task(self._work(uid, pod), name=f"pod {object_key(pod)}")

    def _gone(self, uid: str) -> None:
        """The API object is gone; its worker (if it still runs) unprepares and ends."""
        if (wake := self._wake.get(uid)) is not None:
            wake.set()

    # --- one pod ---

    async def _work(self, uid: str, first: dict[str, Any]) -> None:
        """Drive one pod until its claims are unprepared and its API object is gone (or it is terminal). Each sync
        but the first waits for the node's next PLEG relist after the previous one, whatever woke the worker."""
        # A pod already Running when first seen has its "sandbox": the kubelet does not prepare it again.
        stopped_unseen = False
        if (first.get("status") or {}).get("phase") == "Running":
            self.started.add(uid)
            stopped_unseen = bool(first["metadata"].get("deletionTimestamp"))
        last = first
        synced = -math.inf
        try:
            while True:
                await self.relists.newer_than(synced)
                wake = self._wake[uid]
                wake.clear()
                pod = self._source.pods.get(uid)
                if pod is not None:
                    last = pod
                period = await self._sync(uid, pod, last, stopped_unseen)
                synced = self.relists.now()
                stopped_unseen = False
                if period is None:
                    return
                await self._wait(wake, period)
        finally:
            self._workers.pop(uid, None)
            self._wake.pop(uid, None)
            self.started.discard(uid)
            self._stopped.discard(uid)
            self._events.forget(uid)
            self._on_change()

    async def _sync(
        self, uid: str, pod: dict[str, Any] | None, last: dict[str, Any], stopped_unseen: bool
    ) -> float | None:
        """One sync; None when the pod is done, else how long until the next one (``backoff``). A pod found
        Running and deleted by its worker's first sync (the node restarted while stopping it) is reported with its
        containers stopped first, as a restarted kubelet finds them in the runtime (kubelet 1.36.2, every run)."""
        log = self._log.with_values(pod=object_key(last), podUID=uid)
        if uid in self._stopped:
            return None if pod is None else await self._delete(pod, log)
        if pod is None or finished(pod):
            if pod is not None and stopped_unseen:
                await self._write(pod, stopped_status(pod, final=False, at=now()), log)
            return await self._terminate(uid, pod, last, log)
        if uid not in self.started:
            pod = await self._write(pod, pending_status(pod, sandbox_ready=False, at=now()), log)
            try:
                await self.manager.prepare_resources(pod)
            except PrepareError as err:
                self.last_error = f"{object_key(pod)}: {err}"
                await self._event(pod, FAILED_PREPARE_REASON, f"Failed to prepare dynamic resources: {err}")
                return self._periods.resync(self._rng)
            for container in pod["spec"].get("containers") or []:
                devices = self.manager.get_resources(pod, container["name"])
                log.info("Starting container", container=container["name"], cdiDevices=devices)
            self.started.add(uid)
            pod = await self._write(pod, pending_status(pod, sandbox_ready=True, at=now()), log)
        resources = allocated_resources(self.manager, self._health, pod)
        await self._write(pod, running_status(pod, resources, at=now()), log)
        self._on_change()
        return self._periods.resync(self._rng)

    async def _terminate(self, uid: str, pod: dict[str, Any] | None, last: dict[str, Any], log: Logger) -> float | None:
        """The terminating sync: unprepare the pod's claims (the pod shows its containers stopped while that fails),
        then give a deleted pod its terminal status; its worker's next sync finishes the deletion (0: at once, which
        is the next PLEG relist)."""
        deleting = pod is not None and bool(pod["metadata"].get("deletionTimestamp"))
        await asyncio.sleep(CONTAINER_STOP_TIME)
        try:
            await self.manager.unprepare_resources(last)
        except UnprepareError as err:
            log.error("Failed to terminate pod, will retry", err)
            self.last_error = f"{object_key(last)}: {err}"
            if pod is not None and deleting:
                await self._write(pod, stopped_status(pod, final=False, at=now()), log)
            return self._periods.back_off(self._rng)
        self.started.discard(uid)
        log.info("Unprepared dynamic resources of terminated pod")
        if pod is None or not deleting:
            return None
        final = stopped_status(pod, final=True, at=now())
        if (await self._write(pod, final, log)).get("status", {}).get("phase") != final["phase"]:
            return self._periods.back_off(self._rng)
        self._stopped.add(uid)
        return 0.0

    async def _delete(self, pod: dict[str, Any], log: Logger) -> float | None:
        """The terminated sync: finish the deletion of a stopped pod (grace period 0), as the kubelet's status manager
        does once ``SyncTerminatedPod`` is done."""
        meta = pod["metadata"]
        path = api_path("", "v1", "pods", namespace=meta["namespace"], name=meta["name"])
        try:
            await self._kube.request("DELETE", path, query={"gracePeriodSeconds": "0"})
        except KubeApiError as err:
            if err.not_found:
                return None
            log.error("Failed to delete terminated pod, will retry", err)
            self.last_error = f"{object_key(pod)}: {err}"
            return self._periods.back_off(self._rng)
        log.info("Deleted terminated pod")
        return None

    async def _wait(self, wake: asyncio.Event, timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await wake.wait()

    # --- status and events ---

    async def _write(self, pod: dict[str, Any], wanted: dict[str, Any], log: Logger) -> dict[str, Any]:
        """Patch the pod's status to ``wanted`` unless the API already shows it; the pod as it is now (unchanged
        when the write failed: the next sync writes it again)."""
        status = pod.get("status") or {}
        if all(status.get(key) == value for key, value in wanted.items()):
            return pod
        meta = pod["metadata"]
        path = api_path("", "v1", "pods", namespace=meta["namespace"], name=meta["name"]) + "/status"
        try:
            written = await self._kube.request(
                "PATCH", path, body={"status": wanted}, content_type="application/merge-patch+json"
            )
        except KubeApiError as err:
            if not err.not_found:
                log.error("Failed to update pod status", err)
            return pod
        log.v(2).info("Pod status updated", phase=wanted["phase"])
        return written

    async def _event(self, pod: Mapping[str, Any], reason: str, message: str) -> None:
        """A Warning Event about the pod from the kubelet, as ``kubectl describe pod`` shows it; once per message."""
        try:
            if await self._events.report(pod, reason, message):
                self._log.with_values(pod=object_key(pod)).info("Warning event", reason=reason, message=message)
        except KubeApiError as err:
            self._log.error("Cannot record event", err, reason=reason)
