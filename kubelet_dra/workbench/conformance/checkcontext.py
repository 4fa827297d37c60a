"""``CheckContext``: what a check works with, and the few verbs every check needs.

A check gets the running testbed, the driver under test and what the capability probe learnt,
and makes its claims, pods and gRPC calls through the context, which registers their clean-up
(run in reverse order even when the check fails) and keeps the calls the check made, for the
report of a failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import attrs

from kubelet_dra.kubelet.cm.dra.plugin import CallRecord
from kubelet_dra.kubelet.cm.dra.plugin.client import DRAClient
from kubelet_dra.peers.api import dra_v1_pb2
from kubelet_dra.peers.api.services import Service
from kubelet_dra.peers.errors import StateError
from kubelet_dra.peers.kube.client import KubeApiError
from kubelet_dra.workbench.conformance.claiming import Claiming
from kubelet_dra.workbench.conformance.options import SuiteOptions
from kubelet_dra.workbench.conformance.outcomes import CheckBlocked, CheckFailed, CheckSkipped
from kubelet_dra.workbench.testbed import DriverProcess, Testbed, objects
from kubelet_dra.workbench.testbed.cdispecs import ResolvedDevice, resolve

T = TypeVar("T")
POD_TIMEOUT = 20.0


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
class CheckContext(Claiming):
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
    limit: asyncio.Timeout | None = None
    """The check's time limit (``--check-timeout``), set by the runner while the check runs."""
    allowed: float = 0.0
    """Seconds the check spent in waits it makes by design (``waiting``), added to its limit."""
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
            except asyncio.CancelledError:  # cut short by the check's time limit: later checks would only repeat it
                self.observations[key] = _Failure(self.check_id, f"{key} did not finish within the check's time limit")
                raise
        seen = self.observations[key]
        if isinstance(seen, _Failure):
            raise CheckBlocked(seen.check_id, seen.reason)
        return seen  # type: ignore[return-value]

    @contextlib.contextmanager
    def waiting(self, longest: float) -> Iterator[None]:
        """A wait the check makes by design, of up to ``longest`` seconds (a republish watched for up to twice
        ``--republish-within``, the health timeout the driver declared): the time it takes is added to the check's
        time limit, which is there to catch a hang, not to cut that wait short and turn a driver that is merely
        slow into "did not finish"."""
        started = time.monotonic()
        self._extend_limit(longest)
        try:
            yield
        finally:
            took = time.monotonic() - started
            self.allowed += took
            self._extend_limit(took - longest)

    def _extend_limit(self, seconds: float) -> None:
        if self.limit is not None and not self.limit.expired() and (deadline := self.limit.when()) is not None:
            self.limit.reschedule(deadline + seconds)

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
