"""``PodWorkers``: the kubelet's pod lifecycle, as far as DRA sees it, for the pods bound to one node.

Pods with ``spec.nodeName`` = the node are watched. Each gets a worker that, like the kubelet's
pod worker, prepares the pod's claims before "starting" it (there are no containers: starting
means asking the manager for each container's CDI devices and reporting the pod Running), and,
once the pod is being deleted or has a terminal phase, unprepares them. A deleted pod then gets
the kubelet's final status (phase Failed, its containers terminated as if killed) and only then is
its deletion finished with grace period 0; a pod that reached Succeeded or Failed by itself keeps
its status and object. A failed step is retried after the kubelet's pod worker backoff (a
fixed period with jitter) or at once when the pod changes; a failed prepare also gets a Warning
Event ``FailedPrepareDynamicResources``. A pod whose unprepare fails stays until it succeeds.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import random
from collections.abc import Callable, Mapping
from typing import Any

from kubelet_dra.kube.client import KubeApiError, KubeClient, api_path
from kubelet_dra.kube.events import PodEventReporter
from kubelet_dra.log import Logger, get_logger
from kubelet_dra.manager import ClaimError, DRAManager, PrepareError, UnprepareError
from kubelet_dra.manager.claims import spec_claims
from kubelet_dra.plugins import DeviceHealth

DEFAULT_RETRY_PERIOD = 10.0
"""The kubelet's pod worker backoff after a failed sync (10 s, plus up to 50 % jitter)."""
RETRY_JITTER = 0.5
RELIST_DELAY = 1.0
FAILED_PREPARE_REASON = "FailedPrepareDynamicResources"
TERMINAL_PHASES = ("Succeeded", "Failed")
POD_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")
TERMINATED_CONDITIONS = {"PodReadyToStartContainers": "", "Ready": "PodCompleted", "ContainersReady": "PodCompleted"}
"""The conditions a terminated pod has False, with their reason; the others stay True."""
KILLED_EXIT_CODE = 137
"""SIGKILL: what a container that ignored SIGTERM for its grace period exits with; non-zero, so the pod Failed."""

HealthLookup = Callable[[str], list[DeviceHealth]]
"""Driver name → its devices' current health (empty when health is not followed)."""


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _key(pod: Mapping[str, Any]) -> str:
    meta = pod["metadata"]
    return f"{meta['namespace']}/{meta['name']}"


def _finished(pod: Mapping[str, Any]) -> bool:
    """Whether the pod is done with its claims: being deleted or in a terminal phase."""
    return bool(pod["metadata"].get("deletionTimestamp")) or (pod.get("status") or {}).get("phase") in TERMINAL_PHASES


class PodWorkers:
    """Watches the node's pods and runs one worker task per pod UID (see the module docstring)."""

    def __init__(
        self,
        kube: KubeClient,
        node_name: str,
        manager: DRAManager,
        *,
        health: HealthLookup,
        retry_period: float = DEFAULT_RETRY_PERIOD,
        rng: random.Random | None = None,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self._kube = kube
        self._node = node_name
        self.manager = manager
        self._health = health
        self._retry_period = retry_period
        self._rng = rng or random.Random()
        self._on_change = on_change
        self._log = get_logger("pod-workers", node=node_name)
        self._pods: dict[str, dict[str, Any]] = {}
        """UID → the pod as last seen; removed when the API object is gone."""
        self._wake: dict[str, asyncio.Event] = {}
        self._workers: dict[str, asyncio.Task[None]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._events = PodEventReporter(kube, {"component": "kubelet", "host": node_name})
        self.started: set[str] = set()
        """UIDs of pods whose claims are prepared and that were reported Running."""
        self.last_error = ""
        """The latest failed prepare, unprepare or final delete, for status views ("" while none failed)."""

    def start(self) -> None:
        self._tasks.append(asyncio.create_task(self._watch(), name="pod watch"))

    async def stop(self) -> None:
        tasks = [*self._tasks, *self._workers.values()]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)

    def refresh(self) -> None:
        """Wake the workers of running pods, e.g. after device health changed, to re-report their status.

        Pods waiting for a retry keep waiting: the kubelet's backoff is not cut short by device changes.
        """
        for uid in self.started:
            self._wake[uid].set()

    def active_pod_uids(self) -> set[str]:
        """The kubelet's active pods (the reconcile loop unprepares all others): known pods whose worker has not
        finished with them. As in the kubelet's ``filterOutInactivePods``, a pod being deleted or gone terminal stays
        active while its worker unprepares it, so the reconcile loop never unprepares its claims a second time beside
        the worker; a pod gone from the API is not active."""
        return {uid for uid in self._pods if uid in self._workers}

    # --- watching ---

    async def _watch(self) -> None:
        """List, then watch from the list's resourceVersion; relist after any break (a kubelet's pod source)."""
        path = api_path("", "v1", "pods")
        query = {"fieldSelector": f"spec.nodeName={self._node}"}
        reconciling = False
        while True:
            try:
                listed = await self._kube.request("GET", path, query=query)
                self._relisted(listed.get("items") or [])
                if not reconciling:  # the reconcile loop starts once the pod source has synced
                    reconciling = True
                    self._tasks.append(
                        asyncio.create_task(self.manager.reconcile_loop(self.active_pod_uids), name="reconcile")
                    )
                watch_query = {**query, "resourceVersion": listed["metadata"]["resourceVersion"]}
                async with contextlib.aclosing(self._kube.watch(path, watch_query)) as events:
                    async for event in events:
                        if event.type == "DELETED":
                            self._gone(event.object["metadata"]["uid"])
                        elif event.type in ("ADDED", "MODIFIED"):
                            self._seen(event.object)
            except KubeApiError as err:
                self._log.v(2).info("Pod watch ended, relisting", err=str(err))
            await asyncio.sleep(RELIST_DELAY)

    def _relisted(self, items: list[dict[str, Any]]) -> None:
        current = {pod["metadata"]["uid"] for pod in items}
        for uid in set(self._pods) - current:
            self._gone(uid)
        for pod in items:
            self._seen(pod)

    def _seen(self, pod: dict[str, Any]) -> None:
        uid = pod["metadata"]["uid"]
        self._pods[uid] = pod
        self._wake.setdefault(uid, asyncio.Event()).set()
        if uid not in self._workers:
            self._workers[uid] = asyncio.create_task(self._work(uid, pod), name=f"pod {_key(pod)}")

    def _gone(self, uid: str) -> None:
        """The API object is gone; its worker (if it still runs) unprepares and ends."""
        self._pods.pop(uid, None)
        if (wake := self._wake.get(uid)) is not None:
            wake.set()

    # --- one pod ---

    async def _work(self, uid: str, first: dict[str, Any]) -> None:
        """Drive one pod until its claims are unprepared and its API object is gone (or it is terminal)."""
        # A pod already Running when first seen has its "sandbox": the kubelet does not prepare it again.
        if (first.get("status") or {}).get("phase") == "Running":
            self.started.add(uid)
        last = first
        try:
            while True:
                wake = self._wake[uid]
                wake.clear()
                pod = self._pods.get(uid)
                if pod is not None:
                    last = pod
                if await self._sync(uid, pod, last):
                    return
                await self._wait(wake, self._retry_period * (1 + RETRY_JITTER * self._rng.random()))
        finally:
            self._workers.pop(uid, None)
            self._wake.pop(uid, None)
            self.started.discard(uid)
            self._events.forget(uid)
            self._on_change()

    async def _sync(self, uid: str, pod: dict[str, Any] | None, last: dict[str, Any]) -> bool:
        """One sync; True when the pod is done. Failures return False (retried after the backoff)."""
        log = self._log.with_values(pod=_key(last), podUID=uid)
        if pod is None or _finished(pod):
            try:
                await self.manager.unprepare_resources(last)
            except UnprepareError as err:
                log.error("Failed to terminate pod, will retry", err)
                self.last_error = f"{_key(last)}: {err}"
                return False
            self.started.discard(uid)
            log.info("Unprepared dynamic resources of terminated pod")
            return pod is None or await self._finish(pod, log)
        if uid not in self.started:
            try:
                await self.manager.prepare_resources(pod)
            except PrepareError as err:
                self.last_error = f"{_key(pod)}: {err}"
                await self._event(pod, FAILED_PREPARE_REASON, f"Failed to prepare dynamic resources: {err}")
                return False
            for container in pod["spec"].get("containers") or []:
                devices = self.manager.get_resources(pod, container["name"])
                log.info("Starting container", container=container["name"], cdiDevices=devices)
            self.started.add(uid)
        await self._report_running(pod, log)
        self._on_change()
        return False

    async def _finish(self, pod: dict[str, Any], log: Logger) -> bool:
        """Report a deleted pod terminated, then delete it for good (grace period 0); a terminal pod that is
        not deleted just stays."""
        if not pod["metadata"].get("deletionTimestamp"):
            return True
        if not await self._report_terminated(pod, log):
            return False
        meta = pod["metadata"]
        path = api_path("", "v1", "pods", namespace=meta["namespace"], name=meta["name"])
        try:
            await self._kube.request("DELETE", path, query={"gracePeriodSeconds": "0"})
        except KubeApiError as err:
            if err.not_found:
                return True
            log.error("Failed to delete terminated pod, will retry", err)
            self.last_error = f"{_key(pod)}: {err}"
            return False
        log.info("Deleted terminated pod")
        return True

    async def _wait(self, wake: asyncio.Event, timeout: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await wake.wait()

    # --- status ---

    async def _report_running(self, pod: dict[str, Any], log: Logger) -> None:
        """Write phase Running, the conditions and container statuses, unless the API already shows them."""
        status = pod.get("status") or {}
        started = status.get("startTime") or _now()
        wanted = {
            "phase": "Running",
            "startTime": started,
            "conditions": [_condition(kind, status.get("conditions") or [], started) for kind in POD_CONDITIONS],
            "containerStatuses": [
                self._container_status(pod, container, status.get("containerStatuses") or [], started)
                for container in pod["spec"].get("containers") or []
            ],
        }
        if all(status.get(key) == value for key, value in wanted.items()):
            return
        meta = pod["metadata"]
        path = api_path("", "v1", "pods", namespace=meta["namespace"], name=meta["name"]) + "/status"
        try:
            await self._kube.request(
                "PATCH", path, body={"status": wanted}, content_type="application/merge-patch+json"
            )
        except KubeApiError as err:
            log.error("Failed to update pod status", err)
            return
        log.v(2).info("Pod status updated", phase="Running")

    async def _report_terminated(self, pod: dict[str, Any], log: Logger) -> bool:
        """Write the final status of a deleted pod: all containers terminated, phase Failed (a killed container
        exits non-zero). A pod already in a terminal phase keeps it. False when the write failed (retried)."""
        status = pod.get("status") or {}
        if status.get("phase") in TERMINAL_PHASES:
            return True
        now = _now()
        old = status.get("containerStatuses") or []
        final = {
            "phase": "Failed",
            "conditions": [
                _condition(
                    kind,
                    status.get("conditions") or [],
                    now,
                    status="False" if kind in TERMINATED_CONDITIONS else "True",
                    reason=TERMINATED_CONDITIONS.get(kind, ""),
                )
                for kind in POD_CONDITIONS
            ],
            "containerStatuses": [
                _terminated_status(container, old, now) for container in pod["spec"].get("containers") or []
            ],
        }
        meta = pod["metadata"]
        path = api_path("", "v1", "pods", namespace=meta["namespace"], name=meta["name"]) + "/status"
        try:
            await self._kube.request("PATCH", path, body={"status": final}, content_type="application/merge-patch+json")
        except KubeApiError as err:
            if err.not_found:
                return True
            log.error("Failed to update the status of terminated pod, will retry", err)
            return False
        log.v(2).info("Pod status updated", phase="Failed")
        return True

    def _container_status(
        self, pod: Mapping[str, Any], container: Mapping[str, Any], old: list[dict[str, Any]], started: str
    ) -> dict[str, Any]:
        name = container["name"]
        previous = next((entry for entry in old if entry.get("name") == name), {})
        running_since = ((previous.get("state") or {}).get("running") or {}).get("startedAt") or started
        status: dict[str, Any] = {
            "name": name,
            "image": container.get("image", ""),
            "imageID": "",
            "containerID": f"kubelet-dra://{pod['metadata']['uid']}/{name}",
            "ready": True,
            "started": True,
            "restartCount": 0,
            "state": {"running": {"startedAt": running_since}},
        }
        if resources := self._allocated_resources_status(pod, container):
            status["allocatedResourcesStatus"] = resources
        return status

    def _allocated_resources_status(self, pod: Mapping[str, Any], container: Mapping[str, Any]) -> list[dict[str, Any]]:
        """One entry per claim reference of the container, with its devices' health (SPEC.md §5.11)."""
        namespace = pod["metadata"]["namespace"]
        try:
            claim_names = {claim.pod_claim_name: claim.claim_name for claim in spec_claims(pod)}
        except ClaimError:  # a claim name that cannot be resolved has no prepared devices to report
            return []
        entries = []
        for used in (container.get("resources") or {}).get("claims") or []:
            pod_claim, request = used.get("name", ""), used.get("request") or ""
            info = self.manager.cache.get(namespace, claim_names.get(pod_claim, ""))
            if info is None:
                continue
            resources: dict[str, dict[str, Any]] = {}
            base_request = request.split("/")[0]
            for driver, devices in info.driver_state.items():
                health = {device.key: device for device in self._health(driver)}
                for device in devices:
                    if base_request and base_request not in device.request_names:
                        continue
                    resource_id = (
                        device.cdi_device_ids[0]
                        if device.cdi_device_ids
                        else f"{driver}/{device.pool_name}/{device.device_name}"
                    )
                    known = health.get(f"{device.pool_name}/{device.device_name}")
                    entry = {"resourceID": resource_id, "health": str(known.health) if known else "Unknown"}
                    if known is not None and known.message:
                        entry["message"] = known.message
                    resources.setdefault(resource_id, entry)
            if resources:
                name = f"claim:{pod_claim}/{request}" if request else f"claim:{pod_claim}"
                entries.append({"name": name, "resources": list(resources.values())})
        return entries

    # --- events ---

    async def _event(self, pod: Mapping[str, Any], reason: str, message: str) -> None:
        """A Warning Event about the pod from the kubelet, as ``kubectl describe pod`` shows it; once per message."""
        try:
            if await self._events.report(pod, reason, message):
                self._log.with_values(pod=_key(pod)).info("Warning event", reason=reason, message=message)
        except KubeApiError as err:
            self._log.error("Cannot record event", err, reason=reason)


def _condition(
    kind: str, old: list[dict[str, Any]], since: str, *, status: str = "True", reason: str = ""
) -> dict[str, Any]:
    """A condition, keeping its transition time when its status did not change."""
    previous = next((entry for entry in old if entry.get("type") == kind), {})
    since = previous.get("lastTransitionTime", since) if previous.get("status") == status else since
    condition = {"type": kind, "status": status, "lastTransitionTime": since}
    if reason:
        condition["reason"] = reason
    return condition


def _terminated_status(container: Mapping[str, Any], old: list[dict[str, Any]], finished: str) -> dict[str, Any]:
    """A container of a deleted pod, terminated: killed if it was running, else never located (as the kubelet
    reports containers it cannot find when the pod terminates)."""
    name = container["name"]
    previous = next((entry for entry in old if entry.get("name") == name), {})
    started = ((previous.get("state") or {}).get("running") or {}).get("startedAt")
    terminated: dict[str, Any] = {"exitCode": KILLED_EXIT_CODE, "finishedAt": finished}
    if started:
        terminated |= {"reason": "Error", "startedAt": started, "containerID": previous.get("containerID", "")}
    else:
        terminated |= {
            "reason": "ContainerStatusUnknown",
            "message": "The container could not be located when the pod was terminated",
        }
    return {
        "name": name,
        "image": container.get("image", ""),
        "imageID": "",
        "containerID": previous.get("containerID", ""),
        "ready": False,
        "started": False,
        "restartCount": previous.get("restartCount", 0),
        "state": {"terminated": terminated},
    }
