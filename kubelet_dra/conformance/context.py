"""``CheckContext``: what a check works with, and the few verbs every check needs.

A check gets the running testbed, the driver under test and what the capability probe learnt,
and makes its claims, pods and gRPC calls through the context, which registers their clean-up
(run in reverse order even when the check fails) and keeps the calls the check made, for the
report of a failure.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import attrs
import grpc

from kubelet_dra.api import dra_v1_pb2
from kubelet_dra.api.services import Service
from kubelet_dra.conformance.outcomes import CheckBlocked, CheckFailed, CheckSkipped
from kubelet_dra.conformance.shapes import ClaimShapes, NotDerivable, device_requests
from kubelet_dra.conformance.suggestion import suggest
from kubelet_dra.controlplane.allocator import Allocation, Unsatisfiable, allocate
from kubelet_dra.controlplane.sharing import Usage
from kubelet_dra.errors import StateError
from kubelet_dra.kube.client import KubeApiError
from kubelet_dra.manager.cdi import ResolvedDevice, resolve
from kubelet_dra.plugins import CallRecord
from kubelet_dra.plugins.client import DRAClient
from kubelet_dra.testbed import DriverProcess, Testbed, manifests, objects

T = TypeVar("T")
POD_TIMEOUT = 20.0
CONSUMER_GROUP = "kubelet-dra.dev"
CONSUMER_RESOURCE = "conformancechecks"


@attrs.frozen
class SuiteOptions:
    """Knobs of the suite itself (not of the driver)."""

    idempotency_count: int = 10
    latency_warning: float = 5.0
    """Warn when one prepare takes longer than this (the kubelet gives up after 45 s)."""
    republish_within: float = 75.0
    """How long a driver may take to publish its ResourceSlices again after they were wiped. Measured
    against a real kube-apiserver, the 0.36 kubeletplugin helper re-created deleted slices after
    25 s (a collection delete), 42 s and 54 s (single deletes): 75 s gives the same verdict every run.
    A driver is watched twice as long before it is said never to republish."""
    check_timeout: float = 60.0
    device_class: str | None = None
    """An existing DeviceClass to allocate from; default: one the suite creates for all the driver's devices."""
    strict: bool = False
    """A failed ``should`` check fails the run too (``--strict``), instead of being a warning."""
    claims: ClaimShapes = attrs.Factory(ClaimShapes)
    """The claims the driver accepts (``--claim``); checks make every claim of these shapes."""


@attrs.frozen
class Capabilities:
    """What the probe learnt about the driver before any check ran."""

    driver_name: str
    endpoint: str
    versions: tuple[str, ...]
    """The service identifiers GetInfo advertised."""
    chosen_service: str
    health_services: tuple[Service, ...]
    """The health services GetInfo advertised, in the 1.37 kubelet's order of preference (v1 first)."""
    can_restart: bool
    embedded: bool
    reference: bool
    socket_path: str = ""
    """The driver's registration socket in the registry dir."""
    registration_error: str = ""
    """Why the node could not register the driver (its diagnosis); empty when it did."""

    @property
    def health(self) -> bool:
        return bool(self.health_services)

    def to_json(self) -> dict[str, Any]:
        """The capabilities for ``--output json``: each health service by its advertised identifier."""
        fields = attrs.asdict(self, filter=lambda field, _: field.name != "health_services")
        return {**fields, "health": self.health, "health_services": [s.advertised for s in self.health_services]}


@attrs.define
class CheckContext:
    bed: Testbed
    driver: DriverProcess | None
    """The driver's process when the suite started it; ``None`` for a driver that was already running."""
    capabilities: Capabilities
    options: SuiteOptions
    device_class: str
    observations: dict[str, object] = attrs.Factory(dict)
    """What ``observe`` saw in this run, shared by every check of the run."""
    check_id: str = ""
    """The check this context runs, named as the cause when what it observed fails later checks too."""
    warnings: list[str] = attrs.Factory(list)
    _cleanups: list[Callable[[], Awaitable[object]]] = attrs.Factory(list)
    _first_call: int = 0
    _made: list[str] = attrs.Factory(list)
    """The names of the claims this check made, in order."""

    def __attrs_post_init__(self) -> None:
        self._first_call = len(self.bed.calls())

    @property
    def driver_name(self) -> str:
        return self.capabilities.driver_name

    @property
    def node_name(self) -> str:
        return self.bed.options.node_name

    # --- verdicts ---

    @staticmethod
    def fail(message: str) -> NoReturn:
        raise CheckFailed(message)

    @staticmethod
    def skip(reason: str) -> NoReturn:
        raise CheckSkipped(reason)

    def expect(self, condition: object, message: str) -> None:
        if not condition:
            self.fail(message)

    def require_registered(self) -> None:
        """Fail at once, with the node's diagnosis, when the driver never registered (instead of waiting)."""
        if self.capabilities.registration_error:
            self.fail(f"driver not registered: {self.capabilities.registration_error}")

    def warn(self, message: str) -> None:
        """Something to tell the driver's author that does not fail the check."""
        self.warnings.append(message)

    async def observe(self, key: str, make: Callable[[], Awaitable[T]]) -> T:
        """What several checks need (one kubelet restart and the driver's republish after it; a claim the
        driver accepts), brought about by the first check that asks and shared with the later ones, so a run
        pays for it once. When bringing it about fails that check, it is the root cause: every later check
        that asks is blocked by it (shown under it), not failed again with the same reason."""
        if key not in self.observations:
            try:
                self.observations[key] = await make()
            except CheckFailed as failure:
                self.observations[key] = _Failure(self.check_id, str(failure))
                raise
        seen = self.observations[key]
        if isinstance(seen, _Failure):
            raise CheckBlocked(seen.check_id, seen.reason)
        return seen  # type: ignore[return-value]

    # --- clean-up ---

    def defer(self, cleanup: Callable[[], Awaitable[object]]) -> None:
        """Run ``cleanup`` after the check, whatever its outcome (last registered, first run)."""
        self._cleanups.append(cleanup)

    async def cleanup(self) -> list[str]:
        """Run every registered clean-up; what failed, for the report (a failed clean-up stops nothing)."""
        problems = []
        while self._cleanups:
            try:
                await self._cleanups.pop()()
            except Exception as err:  # every clean-up runs; the report names what failed
                problems.append(f"clean-up failed: {err}")
        return problems

    # --- calls ---

    def calls(self, method: str | None = None) -> list[CallRecord]:
        """The gRPC calls made to the driver since this check started (optionally of one method)."""
        records = self.bed.calls()[self._first_call :]
        return [
            r for r in records if r.driver == self.driver_name and (method is None or r.method.endswith(f"/{method}"))
        ]

    def client(self) -> DRAClient:
        """The node's gRPC client for the driver: calls go out with request IDs and are recorded."""
        return self.bed.node.plugins.get_plugin(self.driver_name).client

    async def prepare(self, *claims: dict[str, Any]) -> dra_v1_pb2.NodePrepareResourcesResponse:
        request = dra_v1_pb2.NodePrepareResourcesRequest(claims=[claim_ref(claim) for claim in claims])
        return await self.client().node_prepare_resources(request)

    async def unprepare(self, *claims: dict[str, Any]) -> dra_v1_pb2.NodeUnprepareResourcesResponse:
        request = dra_v1_pb2.NodeUnprepareResourcesRequest(claims=[claim_ref(claim) for claim in claims])
        return await self.client().node_unprepare_resources(request)

    # --- objects ---

    def name(self, prefix: str) -> str:
        return f"{prefix}-{uuid.uuid4().hex[:6]}"

    async def slices(self) -> list[dict[str, Any]]:
        """The ResourceSlices of the driver on this node, as the API server has them now."""
        selector = f"spec.nodeName={self.node_name},spec.driver={self.driver_name}"
        return await objects.list_objects(self.bed.kube, "ResourceSlice", field_selector=selector)

    async def allocated_claim(
        self, count: int = 1, *, name: str | None = None, requests: Sequence[str] = ("device",)
    ) -> dict[str, Any]:
        """A ResourceClaim of the shape the driver accepts (``--claim``; by default ``count`` devices per request)
        allocated on this node, as a scheduler would, for calling the driver directly. It is reserved for the
        suite itself (not a pod), so the control plane keeps its allocation; unprepared (best effort) and
        deleted afterwards. ``name`` is for checks whose claim a fault knob of the reference driver picks by
        name. Blocked when the driver refused such a claim; skipped when the shape cannot give what is asked."""
        await self.require_accepted()
        claim = await self._allocated(name or self.name("claim"), count=count, requests=requests)
        wanted, got = count * len(requests), len(claim["status"]["allocation"]["devices"]["results"])
        if self.options.claims and got < wanted:
            self.skip(f"needs a claim of {wanted} devices; {self.options.claims.describe()} was allocated {got}")
        return claim

    async def _allocated(
        self, name: str, *, count: int = 1, requests: Sequence[str] = ("device",), index: int | None = None
    ) -> dict[str, Any]:
        """The check's next claim (or the ``index``-th shape), created and allocated; a claim that fits alone but
        not beside the check's other claims skips the check (the claims the driver accepts cannot be that many
        at once here)."""
        shape = len(self._made) if index is None else index
        try:
            spec = self.options.claims.spec(shape, self.device_class, count=count, requests=requests)
        except NotDerivable as why:
            self.skip(str(why))
        self._made.append(name)
        manifest = {**manifests.claim(name, self.device_class), "spec": spec}
        claim = await objects.apply(self.bed.kube, manifest)
        self.defer(lambda: self._forget_claim(claim))
        try:
            allocation = await self._allocation(claim)
        except Unsatisfiable as err:
            if len(self._made) > 1 and await self._fits_alone(claim):
                self.skip(
                    f"needs {len(self._made)} claims at once; {self.options.claims.describe()} cannot be allocated"
                    f" that often together on {self.node_name}: {err}"
                )
            self.fail(
                f"cannot allocate {self.options.claims.describe()} of {self.driver_name} on {self.node_name}: {err}"
            )
        consumer = {"apiGroup": CONSUMER_GROUP, "resource": CONSUMER_RESOURCE, "name": claim["metadata"]["name"]}
        status = {"allocation": allocation.to_status(), "reservedFor": [{**consumer, "uid": str(uuid.uuid4())}]}
        return await objects.write_status(self.bed.kube, claim, status)

    async def _fits_alone(self, claim: dict[str, Any]) -> bool:
        """Whether ``claim`` could be allocated if this check's other claims did not hold their devices."""
        others = [
            c
            for c in await objects.list_objects(self.bed.kube, "ResourceClaim")
            if c["metadata"]["name"] not in self._made
        ]
        try:
            await self._allocation(claim, Usage.of(others))
        except Unsatisfiable:
            return False
        return True

    async def require_accepted(self) -> None:
        """Make sure the driver prepares a claim of the shape the checks use, once per run (``ACCEPTED``): the
        first check that asks fails when it does not, every later one is blocked by that check. The calls of a
        try that succeeded are not the check's own: its report starts after them."""
        if ACCEPTED not in self.observations:
            await self.observe(ACCEPTED, self._try_claims)
            self._first_call = len(self.bed.calls())
        await self.observe(ACCEPTED, self._try_claims)

    async def _try_claims(self) -> bool:
        """Allocate, prepare and unprepare one claim of each shape, then delete it, so the check goes on with
        every device free; a failure names the claim, the driver's answer and, for the default shape, the
        ``--claim`` file that would fit the slices."""
        for index in range(max(1, len(self.options.claims.given))):
            name = self.name("accepted")
            claim = await self._allocated(name, index=index)
            try:
                response = await self.prepare(claim)
                entry = response.claims.get(claim["metadata"]["uid"])
                answer = "no entry for the claim" if entry is None else entry.error
                if answer:
                    self.fail(await self.refusal_text(claim, answer, index))
            except grpc.aio.AioRpcError as err:
                if err.code() == grpc.StatusCode.UNAVAILABLE:
                    raise
                self.fail(await self.refusal_text(claim, f"{err.code().name}: {err.details()}", index))
            finally:
                with contextlib.suppress(Exception):
                    await self.unprepare(claim)
                await objects.delete(self.bed.kube, "ResourceClaim", name)
                self._made.remove(name)
        return True

    async def refusal_text(self, claim: dict[str, Any], answer: str, index: int) -> str:
        """What the suite asked, the driver's answer, and what to pass: the finding of a refused claim."""
        results = claim["status"]["allocation"]["devices"]["results"]
        asked = f"{len(results)} device(s): {', '.join(r['device'] for r in results)}"
        text = f"the driver did not prepare a claim for {asked} ({self.options.claims.describe()}): {answer}"
        if self.options.claims:
            return text + f"\nfix the claim of {self.options.claims.given[index].source}, or the driver"
        suggestion = suggest(answer, self.driver_name, await self.slices(), self.node_name)
        return f"{text}\n{suggestion}"

    async def devices_at_once(self) -> int:
        """``allocatable_at_once``, for a check that needs at least one such device: none fails the check."""
        count = await self.allocatable_at_once()
        self.expect(count, f"{self.driver_name} published no devices for {self.node_name} that can be allocated")
        return count

    async def allocatable_at_once(self) -> int:
        """How many of the driver's devices on this node one claim can be allocated together: every published
        one, unless some share counters (partitions of one GPU), then as many as the counters allow.

        A device that allows multiple allocations counts once (one request takes a device once); the others
        are added one at a time, each allocated around the ones before, so an impossible count is never
        searched for (that search only ends at its give-up limit)."""
        slices = await self.slices()
        published = [device for item in slices for device in item["spec"].get("devices") or []]
        shared = sum(1 for device in published if device.get("allowMultipleAllocations"))
        device_class = await objects.get(self.bed.kube, "DeviceClass", self.device_class) or {}
        usage = Usage.of(await objects.list_objects(self.bed.kube, "ResourceClaim"))
        classes = {self.device_class: device_class}
        probe = manifests.claim("probe", self.device_class, count=1)
        selector = {"cel": {"expression": "device.allowMultipleAllocations == false"}}
        probe["spec"]["devices"]["requests"][0]["exactly"]["selectors"] = [selector]
        exclusive = 0
        while True:
            try:
                allocation = allocate(probe, node=self.node_name, slices=slices, classes=classes, in_use=usage)
            except Unsatisfiable:
                return shared + exclusive
            usage.add({"status": {"allocation": allocation.to_status()}})
            exclusive += 1

    async def _allocation(self, claim: dict[str, Any], in_use: Usage | None = None) -> Allocation:
        """The scheduler's decision for ``claim`` on this node, given the slices and claims as they are now (or
        ``in_use``)."""
        slices = await self.slices()
        classes = await self.device_classes(claim)
        if in_use is None:
            in_use = Usage.of(await objects.list_objects(self.bed.kube, "ResourceClaim"))
        return allocate(claim, node=self.node_name, slices=slices, classes=classes, in_use=in_use)

    async def device_classes(self, claim: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """The DeviceClasses the claim's requests name, as the API server has them (missing ones left out)."""
        named = {request.get("deviceClassName", "") for request in device_requests(claim["spec"])}
        found = {name: await objects.get(self.bed.kube, "DeviceClass", name) for name in sorted(named)}
        return {name: device_class for name, device_class in found.items() if device_class is not None}

    async def _forget_claim(self, claim: dict[str, Any]) -> None:
        with contextlib.suppress(Exception):
            await self.unprepare(claim)
        await objects.delete(self.bed.kube, "ResourceClaim", claim["metadata"]["name"])

    async def run_pod(
        self, claims: int = 1, *, devices: int = 1, containers: Sequence[str] = ("main",), running: bool = True
    ) -> dict[str, Any]:
        """A pod on this node with ``claims`` template claims of the shape the driver accepts (by default
        ``devices`` devices each); by default waits until the node reports it Running (its claims prepared).
        Deleted, and waited for, afterwards."""
        await self.require_accepted()
        pod_claims = {}
        for index in range(claims):
            spec = self.options.claims.spec(index, self.device_class, count=devices)
            manifest = manifests.claim_template(self.name("template"), self.device_class)
            template = await objects.apply(self.bed.kube, {**manifest, "spec": {"spec": spec}})
            template_name = template["metadata"]["name"]
            self.defer(lambda name=template_name: objects.delete(self.bed.kube, "ResourceClaimTemplate", name))
            pod_claims[f"claim-{index}"] = template_name
        pod = await objects.apply(
            self.bed.kube,
            manifests.pod(self.name("pod"), self.node_name, templates=pod_claims, containers=containers),
        )
        self.defer(lambda: self.delete_pod(pod))
        return await self.wait_running(pod) if running else pod

    async def require_together(self, count: int) -> None:
        """Skip a check that needs ``count`` claims of the accepted shapes at once when the node cannot hold
        them together (two claims of all the devices never coexist); the allocator decides, on the slices."""
        slices = await self.slices()
        usage = Usage.of(await objects.list_objects(self.bed.kube, "ResourceClaim"))
        for index in range(count):
            claim = {"spec": self.options.claims.spec(index, self.device_class)}
            try:
                allocation = allocate(
                    claim, node=self.node_name, slices=slices, classes=await self.device_classes(claim), in_use=usage
                )
            except Unsatisfiable as err:
                self.skip(
                    f"needs {count} claims at once; only {index} of {self.options.claims.describe()} fit together"
                    f" on {self.node_name} ({err})"
                )
            usage.add({"status": {"allocation": allocation.to_status()}})

    async def wait_running(self, pod: dict[str, Any], timeout: float = POD_TIMEOUT) -> dict[str, Any]:
        name = pod["metadata"]["name"]

        async def running() -> dict[str, Any] | None:
            current = await objects.get(self.bed.kube, "Pod", name)
            return current if current and (current.get("status") or {}).get("phase") == "Running" else None

        try:
            return await self.bed.until(running, timeout=timeout, what=f"pod {name} Running")
        except Exception:
            self.fail(f"pod {name} did not start within {timeout:g} s: {await self.pod_events(pod)}")

    async def wait_prepared(self, pod: dict[str, Any], timeout: float = POD_TIMEOUT) -> dict[str, Any]:
        """Like ``wait_running``, but fail as soon as a ``NodePrepareResources`` call for the pod's claims
        failed: a driver must prepare a valid allocation at the first attempt, and waiting for the kubelet's
        retries only slows the report. Failures before any call (claim not generated yet) are waited out, as
        the kubelet retries them."""
        name = pod["metadata"]["name"]
        first_call = len(self.bed.calls())

        async def settled() -> dict[str, Any] | None:
            current = await objects.get(self.bed.kube, "Pod", name) or pod
            status = current.get("status") or {}
            if status.get("phase") == "Running":
                return current
            claims = {entry.get("resourceClaimName") for entry in status.get("resourceClaimStatuses") or []}
            failed = [
                call
                for call in self.bed.calls()[first_call:]
                if call.driver == self.driver_name
                and call.method.endswith("/NodePrepareResources")
                and claims & {claim.get("name") for claim in call.request.get("claims") or []}
                and call_failed(call)
            ]
            if failed:
                self.fail(f"the node could not prepare the claims of pod {name}: {await self.pod_events(pod)}")
            return None

        try:
            return await self.bed.until(settled, timeout=timeout, what=f"pod {name} Running", interval=0.1)
        except StateError:
            self.fail(f"pod {name} did not start within {timeout:g} s: {await self.pod_events(pod)}")

    async def pod_events(self, pod: dict[str, Any]) -> str:
        """The pod's Warning events, one line each, for failure messages."""
        events = await objects.list_objects(self.bed.kube, "Event", pod["metadata"].get("namespace", "default"))
        lines = [
            f"{event.get('reason')}: {event.get('message')}"
            for event in events
            if (event.get("involvedObject") or {}).get("name") == pod["metadata"]["name"]
        ]
        return "; ".join(lines) or "no events"

    async def delete_pod(self, pod: dict[str, Any], timeout: float = POD_TIMEOUT) -> None:
        """Delete the pod as ``kubectl delete`` does and wait until the node finished it (claims unprepared)."""
        name = pod["metadata"]["name"]
        await objects.delete(self.bed.kube, "Pod", name)

        async def gone() -> bool:
            try:
                return await objects.get(self.bed.kube, "Pod", name) is None
            except KubeApiError:
                return False

        await self.bed.until(gone, timeout=timeout, what=f"pod {name} deleted")

    async def pod_claims(self, pod: dict[str, Any]) -> list[dict[str, Any]]:
        """The ResourceClaims generated for the pod, from its status."""
        current = await objects.get(self.bed.kube, "Pod", pod["metadata"]["name"]) or pod
        names = [s.get("resourceClaimName") for s in (current.get("status") or {}).get("resourceClaimStatuses") or []]
        found = [await objects.get(self.bed.kube, "ResourceClaim", name) for name in names if name]
        return [claim for claim in found if claim is not None]

    def resolve_cdi(self, cdi_ids: Sequence[str]) -> list[ResolvedDevice]:
        """The CDI spec entries behind ``cdi_ids`` under the node's CDI root (``CDIResolutionError`` if missing)."""
        return resolve(cdi_ids, [Path(self.bed.cdi_root)])

    async def timed(self, work: Awaitable[Any]) -> tuple[Any, float]:
        started = time.monotonic()
        result = await work
        return result, time.monotonic() - started


ACCEPTED = "claims accepted"
"""The observation that the driver prepares a claim of the shape the checks use."""


@attrs.frozen
class _Failure:
    """An observation that failed the check that brought it about."""

    check_id: str
    reason: str


def pool_devices(slices: Sequence[dict[str, Any]]) -> frozenset[tuple[str, str]]:
    """(pool, device) of every device in ``slices``."""
    return frozenset((s["spec"]["pool"]["name"], d["name"]) for s in slices for d in s["spec"].get("devices") or [])


def claim_ref(claim: dict[str, Any]) -> dra_v1_pb2.Claim:
    meta = claim["metadata"]
    return dra_v1_pb2.Claim(namespace=meta.get("namespace", "default"), name=meta["name"], uid=meta["uid"])


def call_failed(call: CallRecord) -> bool:
    """A call that failed as a whole, or answered an error for one of its claims."""
    if call.status != "OK" or not isinstance(call.response, dict):
        return True
    return any(entry.get("error") for entry in (call.response.get("claims") or {}).values())
