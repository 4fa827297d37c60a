"""``DRAManager``: the kubelet's DRA manager for one node — prepare and unprepare per pod, CDI IDs per container.

It follows the kubelet's ``pkg/kubelet/cm/dra/manager.go`` step by step (docs/protocol.md#dra-manager): a
pod's claims are all validated before the claim info cache changes; the checkpoint is written before any
driver call; each driver instance gets ONE call per pod with every claim it has to handle; any failure of
any claim fails the whole pod, with the kubelet's error texts. Where 1.37 differs
(docs/releases.md#what-137-does-differently) the node's ``KubeletRelease`` says which way to go. The manager
reaches drivers and the API server only through the node it is given, so it runs the same against the
bundled driver and a real one. Each
``PrepareResources``/``UnprepareResources`` is timed, and the prepared claims counted, in the node's metrics.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping, Sequence
from typing import Any, Protocol

from kubelet_dra.kubelet.cm.dra.claiminfo import ClaimInfo, ClaimInfoCache, device_state
from kubelet_dra.kubelet.cm.dra.claims import ClaimError, PodClaim, check_owner, check_reserved, pod_claims
from kubelet_dra.kubelet.cm.dra.containers import cdi_annotations, cdi_device_ids
from kubelet_dra.kubelet.cm.dra.drivers import (
    DriverInstance,
    PluginStore,
    call,
    check_answers,
    claim_results,
    request_claim,
)
from kubelet_dra.kubelet.cm.dra.skips import PREPARE_OPERATION, UNPREPARE_OPERATION, OptionalOperations
from kubelet_dra.kubelet.cm.dra.state.checkpoint import Checkpoint
from kubelet_dra.kubelet.metrics.metrics import PREPARE, UNPREPARE, DRAMetrics
from kubelet_dra.kubelet.release import DEFAULT_RELEASE, KubeletRelease
from kubelet_dra.peers.api import dra_v1_pb2
from kubelet_dra.peers.errors import ConfigError, DriverNotRegistered, KubeletDRAError, KubeletError, StateError
from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path, object_key
from kubelet_dra.peers.log import Logger, get_logger

DEFAULT_RECONCILE_PERIOD = 60.0


class PrepareError(KubeletError):
    """``PrepareResources`` failed for a pod: the pod stays pending and is retried; the text is the kubelet's."""


class UnprepareError(KubeletError):
    """``UnprepareResources`` failed for a pod: termination is retried; the text is the kubelet's."""


class NodeParts(Protocol):
    """What the manager uses of a ``Node``: its name, API client, DRA plugin store and metrics."""

    @property
    def name(self) -> str: ...

    @property
    def kube(self) -> KubeClient | None: ...

    @property
    def plugins(self) -> PluginStore: ...

    @property
    def metrics(self) -> DRAMetrics: ...


class DRAManager:
    """Prepares and unprepares the ResourceClaims of pods on one node, remembering them in the checkpoint.

    The checkpoint is loaded at construction, so a manager started on an existing state dir can
    unprepare what an earlier one prepared (those claims count as not prepared until prepared again).
    """

    def __init__(
        self,
        node: NodeParts,
        checkpoint: Checkpoint,
        *,
        reconcile_period: float = DEFAULT_RECONCILE_PERIOD,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        release: KubeletRelease = DEFAULT_RELEASE,
        optional_node_operations: bool = False,
    ) -> None:
        if node.kube is None:
            raise ConfigError(
                "the DRA manager needs an API server to read ResourceClaims",
                where=f"node {node.name}",
                fix="start the node with a kubeconfig",
            )
        self._kube = node.kube
        self._plugins = node.plugins
        self.reconcile_period = reconcile_period
        self.release = release
        self.optional_node_operations = optional_node_operations
        self._optional = _optional_operations(release, optional_node_operations)
        self._sleep = sleep or asyncio.sleep
        self._log = get_logger("dra-manager", node=node.name)
        try:
            self.cache = ClaimInfoCache(checkpoint, read_skips=release.optional_node_operations)
        except StateError as err:  # NewManager in pkg/kubelet/cm/dra/manager.go: the kubelet exits with this
            raise err.wrapped("create ResourceClaim cache") from err
        self._metrics = node.metrics
        self._metrics.count_claims_with(self.cache.claims_in_use)

    # --- the kubelet's entry points ---

    async def prepare_resources(self, pod: Mapping[str, Any]) -> None:
        """Prepare every claim of ``pod`` that is not prepared yet; ``PrepareError`` when anything fails."""
        log = self._log.with_values(pod=object_key(pod))
        try:
            with self._timed(PREPARE):
                await self._prepare(pod, log)
        except ClaimError as err:
            log.error("Failed to prepare dynamic resources", err)
            raise PrepareError(f"prepare dynamic resources: {err}") from err

    async def unprepare_resources(self, pod: Mapping[str, Any]) -> None:
        """Release the pod's claims; a claim still used by another pod only forgets this pod."""
        log = self._log.with_values(pod=object_key(pod))
        meta = pod.get("metadata") or {}
        pod_uid = str(meta.get("uid", ""))
        try:
            with self._timed(UNPREPARE):
                names = self.cache.claim_names_for_pod(pod_uid) if self.release.unprepare_names_from_cache else []
                names = names or [claim.claim_name for claim in pod_claims(pod)]
                await self._unprepare(pod_uid, str(meta.get("namespace", "")), names, log)
        except ClaimError as err:
            log.error("Failed to unprepare dynamic resources", err)
            raise UnprepareError(f"unprepare dynamic resources: {err}") from err

    async def reconcile(self, active_pod_uids: Collection[str]) -> dict[str, str]:
        """Unprepare for every pod the cache references that is not active; pod UID → error of those that failed.

        Failures are logged and left for the next round, as the kubelet's reconcile loop does.
        """
        failed = {}
        for (pod_uid, namespace), names in self.cache.inactive_pods(active_pod_uids).items():
            log = self._log.with_values(podUID=pod_uid)
            try:
                await self._unprepare(pod_uid, namespace, names, log)
            except ClaimError as err:
                log.info("Unpreparing pod resources in reconcile loop failed, will retry", err=str(err))
                failed[pod_uid] = str(err)
        return failed

    async def reconcile_loop(self, active_pod_uids: Callable[[], Collection[str]]) -> None:
        """Reconcile every ``reconcile_period`` seconds until cancelled."""
        while True:
            await self._sleep(self.reconcile_period)
            await self.reconcile(active_pod_uids())

    def get_resources(self, pod: Mapping[str, Any], container_name: str) -> list[str]:
        """The CDI device IDs for one container of a prepared pod, in claim order (CRI ``cdi_devices``)."""
        return cdi_device_ids(self.cache, pod, container_name)

    def cdi_annotations(self, pod: Mapping[str, Any], container_name: str) -> dict[str, str]:
        """The same devices as ``cdi.k8s.io/<driver>_<claimUID>`` annotations, as the ≤1.30 kubelet passed them."""
        return cdi_annotations(self.cache, pod, container_name)

    def pod_might_need_unprepare(self, pod_uid: str) -> bool:
        """While this holds, the kubelet reports no terminal phase for the pod (so its deletion waits)."""
        return self.cache.has_pod_reference(pod_uid)

    # --- prepare (manager.go: prepareResources) ---

    async def _prepare(self, pod: Mapping[str, Any], log: Logger) -> None:
        meta = pod.get("metadata") or {}
        pod_uid, namespace = str(meta.get("uid", "")), str(meta.get("namespace", ""))
        validated = [await self._validate(pod, namespace, claim, log) for claim in pod_claims(pod)]

        # Phase B: no await until the batches are built, so no other pod's work interleaves; then one
        # checkpoint write covers every claim's new pod reference before any driver call (the kubelet
        # writes after each claim, with nothing in between that a driver or the API server could see).
        batches: dict[DriverInstance, list[dra_v1_pb2.Claim]] = {}
        sent: list[ClaimInfo] = []
        skipped: set[str] = set()
        for info, instances in validated:
            entry = self.cache.get(info.namespace, info.claim_name)
            if entry is None:
                self.cache.add(info)
                entry = info
            elif entry.claim_uid != info.claim_uid:
                raise ClaimError(
                    f"old ResourceClaim with same name {info.claim_name} and different UID {entry.claim_uid}"
                    " still exists (previous pod force-deleted?!)"
                )
            elif entry.unpreparing and self.release.prepare_refuses_unpreparing:
                raise ClaimError(
                    f"ResourceClaim {info.claim_name} is being unprepared for its previous pod;"
                    " it is prepared again once that has finished"
                )
            self.cache.add_pod(entry, pod_uid)
            if entry.prepared:
                log.v(5).info("Resources already prepared", claim=entry.key)
                continue
            sent.append(entry)
            claim_ref = request_claim(entry)
            for instance in instances:
                batches.setdefault(instance, []).append(claim_ref)
            skipped.update(driver for driver in info.driver_state if info.skips(driver, PREPARE_OPERATION))
        if validated:
            await self._sync("checkpoint ResourceClaim cache")
        self._count_skips(PREPARE, skipped, log)

        # Phase C: one call per driver instance; the first problem aborts the pod.
        for instance, claims in batches.items():
            request = dra_v1_pb2.NodePrepareResourcesRequest(claims=claims)
            response = await call("NodePrepareResources", instance.client.node_prepare_resources(request))
            for claim, result in claim_results("NodePrepareResources", claims, response.claims):
                entry = self.cache.get_in_use(claim.namespace, claim.name)
                devices = map(device_state, result.devices)
                replace = self.release.prepare_replaces_devices
                self.cache.set_devices(entry, instance.driver_name, devices, replace=replace)

        # Phase D
        for entry in sent:
            entry.prepared = True
        await self._sync("checkpoint ResourceClaim state")
        if sent:
            log.info("Prepared dynamic resources", claims=[entry.key for entry in sent], calls=len(batches))

    async def _validate(
        self, pod: Mapping[str, Any], namespace: str, pod_claim: PodClaim, log: Logger
    ) -> tuple[ClaimInfo, list[DriverInstance]]:
        """Phase A for one claim: read it, check the pod may use it, find an instance of each of its drivers."""
        log.v(3).info("Processing resource", podClaim=pod_claim.pod_claim_name)
        path = api_path("resource.k8s.io", "v1", "resourceclaims", namespace=namespace, name=pod_claim.claim_name)
        try:
            claim = await self._kube.get(path)
        except KubeApiError as err:
            raise ClaimError(f"fetch ResourceClaim {pod_claim.claim_name}: {err.message}") from err
        if pod_claim.check_owner:
            check_owner(pod, claim)
        check_reserved(pod, claim)
        info = ClaimInfo.from_claim(claim, self._optional)
        # A driver whose preparation is skipped need not even be registered.
        return info, [self._plugin(driver) for driver in info.driver_state if not info.skips(driver, PREPARE_OPERATION)]

    # --- unprepare (manager.go: unprepareResources) ---

    async def _unprepare(self, pod_uid: str, namespace: str, claim_names: Sequence[str], log: Logger) -> None:
        batches: dict[str, list[dra_v1_pb2.Claim]] = {}
        done: list[ClaimInfo] = []
        skipped: set[str] = set()
        for name in claim_names:
            entry = self.cache.get(namespace, name)
            if entry is None:
                continue
            if pod_uid not in entry.pod_uids and self.release.unprepare_needs_pod_reference:
                log.v(5).info("Claim not used by the pod, not unpreparing it", claim=entry.key)
                continue
            if len(entry.pod_uids) > 1:
                self.cache.remove_pod(entry, pod_uid)  # written with the next checkpoint, like the kubelet
                continue
            entry.unpreparing = True
            done.append(entry)
            claim_ref = request_claim(entry)
            for driver in entry.driver_state:
                if entry.skips(driver, UNPREPARE_OPERATION):
                    skipped.add(driver)
                else:
                    batches.setdefault(driver, []).append(claim_ref)
        self._count_skips(UNPREPARE, skipped, log)

        try:
            for driver, claims in batches.items():
                instance = self._plugin(driver)
                request = dra_v1_pb2.NodeUnprepareResourcesRequest(claims=claims)
                response = await call("NodeUnprepareResources", instance.client.node_unprepare_resources(request))
                check_answers("NodeUnprepareResources", claims, response.claims)
        finally:
            for entry in done:
                entry.unpreparing = False  # deleted below on success; usable again after a failure

        for entry in done:
            self.cache.delete(namespace, entry.claim_name)
        await self._sync("checkpoint ResourceClaim state")
        if done:
            log.info("Unprepared dynamic resources", claims=[entry.key for entry in done])

    # --- internals ---

    @contextlib.contextmanager
    def _timed(self, operation: str) -> Iterator[None]:
        """Observe one whole per-pod operation into ``dra_operations_duration_seconds``; any exception is an error."""
        started, error = time.monotonic(), True
        try:
            yield
            error = False
        finally:
            self._metrics.observe_operation(operation, error, time.monotonic() - started)

    def _count_skips(self, operation: str, drivers: Collection[str], log: Logger) -> None:
        """One skipped call per driver that would otherwise have had one (1.37's optional node operations)."""
        for driver in sorted(drivers):
            log.v(3).info("Skipping optional node operation", driver=driver, operation=f"Node{operation}")
            self._metrics.count_skip(operation, driver)

    def _plugin(self, driver: str) -> DriverInstance:
        try:
            return self._plugins.get_plugin(driver)
        except DriverNotRegistered as err:  # the store's refusal; anything else is a bug, not the pod's failure
            raise ClaimError(str(err)) from err

    async def _sync(self, what: str) -> None:
        try:
            await self.cache.sync_to_checkpoint()
        except KubeletDRAError as err:
            raise ClaimError(f"{what}: {err}") from err


def _optional_operations(release: KubeletRelease, gate: bool) -> OptionalOperations:
    if not release.optional_node_operations:
        return OptionalOperations.UNKNOWN
    return OptionalOperations.ENABLED if gate else OptionalOperations.DISABLED
