"""How a check gets its claims and pods: of the shape the driver accepts (``--claim``), allocated from its slices
as kube-scheduler would, and only once the driver was seen to prepare such a claim.

``Claiming`` is the part of ``CheckContext`` that makes claims; it uses the context's verdicts, clean-up and
calls, so a check reads ``ctx.allocated_claim()`` as before.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence
from typing import Any

import grpc

from kubelet_dra.peers.controlplane.allocator import Allocation, Unsatisfiable, allocate
from kubelet_dra.peers.controlplane.sharing import Usage
from kubelet_dra.workbench.conformance.options import SuiteOptions
from kubelet_dra.workbench.conformance.suggestion import suggest
from kubelet_dra.workbench.testbed import Testbed, manifests, objects
from kubelet_dra.workbench.testbed.claimshapes import NotDerivable, device_requests

CONSUMER_GROUP = "kubelet-dra.dev"
CONSUMER_RESOURCE = "conformancechecks"
ACCEPTED = "claims accepted"
"""The observation that the driver prepares a claim of the shape the checks use."""


class Claiming:
    """Claims and pods for a check; the rest of ``CheckContext`` (verdicts, clean-up, calls) is used as is."""

    bed: Testbed
    options: SuiteOptions
    device_class: str
    observations: dict[str, object]
    _made: list[str]
    """The names of the claims this check made, in order."""
    _first_call: int

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
        slices = await self.slices()
        suggestion = suggest(answer, self.driver_name, slices, self.node_name, self.options.outputs_dir)
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
