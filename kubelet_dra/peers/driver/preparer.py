"""NodePrepareResources / NodeUnprepareResources: the driver's actual work, version-neutral.

Mirrors the Go helper's wrapper (docs/protocol.md#helper-defaults): claims are read from the API server first (any
problem fails the whole call), then one lock serializes the preparation itself, like the helper's
default ``Serialize(true)``. Preparing is idempotent (a repeat rewrites the same CDI spec and
returns the same devices) and every change is checkpointed before the answer goes out.
"""

from __future__ import annotations

import asyncio
import collections
import re
import uuid
from typing import Any

import attrs

from kubelet_dra.peers.driver.cdi import CDIDevice, CDISpecs
from kubelet_dra.peers.driver.checkpoint import Checkpoint, PreparedClaim, PreparedDevice
from kubelet_dra.peers.driver.claims import (
    AllocatedDevice,
    ClaimFailed,
    ClaimRef,
    allocated_devices,
    fetch_claim,
    opaque_configs,
)
from kubelet_dra.peers.driver.devices import Device, Inventory
from kubelet_dra.peers.driver.knobs import Faults
from kubelet_dra.peers.driver.policy import refusal
from kubelet_dra.peers.driver.rpc import CallFailed
from kubelet_dra.peers.driver.settings import DriverSettings
from kubelet_dra.peers.kube.resource import ResourceAPI
from kubelet_dra.peers.log import Logger


@attrs.frozen
class PrepareResult:
    """One claim's answer: its devices, or the reason it failed."""

    devices: tuple[PreparedDevice, ...] = ()
    error: str = ""


def _env_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]", "_", text).upper()


class Preparer:
    """Prepares and unprepares claims for this node, remembering them in the checkpoint."""

    def __init__(
        self,
        settings: DriverSettings,
        faults: Faults,
        inventory: Inventory,
        cdi: CDISpecs,
        resources: ResourceAPI,
        log: Logger,
    ) -> None:
        self._settings = settings
        self._faults = faults
        self._inventory = inventory
        self._cdi = cdi
        self._resources = resources
        self._log = log
        self._checkpoint = Checkpoint(settings.checkpoint_path)
        self._claims = self._checkpoint.load()
        self._lock = asyncio.Lock()
        self.blocked: collections.Counter[str] = collections.Counter()
        """The calls a block knob holds now, by method: what a scenario waits for before it cuts them."""

    @property
    def prepared(self) -> dict[str, PreparedClaim]:
        """Claims prepared now (including by earlier runs), by UID."""
        return dict(self._claims)

    async def prepare(self, refs: list[ClaimRef]) -> dict[str, PrepareResult]:
        if self._settings.no_op:
            return {ref.uid: PrepareResult() for ref in refs}
        await self._stall("NodePrepareResources", "prepare-block", delay=self._faults.get("prepare-delay"))
        claims = [await fetch_claim(self._resources, ref) for ref in refs]
        if error := self._faults.get("prepare-error"):
            raise CallFailed(f"prepare resource claims: {error}")
        failing = self._faults.get("prepare-fail-claim")
        async with self._lock:
            results = {}
            for ref, claim in zip(refs, claims, strict=True):
                try:
                    if failing and ref.matches(failing):
                        raise ClaimFailed(f"injected failure (fault prepare-fail-claim) for claim {ref}")
                    results[ref.uid] = PrepareResult(devices=await self._prepare_claim(ref, claim))
                except ClaimFailed as err:
                    self._log.error("prepare claim failed", err, claim=str(ref), claimUID=ref.uid)
                    results[ref.uid] = PrepareResult(error=err.what)
            self._checkpoint.save(self._claims)
        return self._distort(refs, results)

    async def unprepare(self, refs: list[ClaimRef]) -> dict[str, str]:
        """Per claim UID the error text ("" = done); claims never prepared succeed."""
        if self._settings.no_op:
            return dict.fromkeys((ref.uid for ref in refs), "")
        await self._stall("NodeUnprepareResources", "unprepare-block")
        if error := self._faults.get("unprepare-error"):
            raise CallFailed(f"unprepare resource claims: {error}")
        async with self._lock:
            results = {}
            for ref in refs:
                try:
                    self._cdi.remove_claim(ref.uid)
                except OSError as err:
                    results[ref.uid] = f"remove CDI spec {self._cdi.claim_path(ref.uid)}: {err.strerror}"
                    continue
                self._claims.pop(ref.uid, None)
                results[ref.uid] = ""
            self._checkpoint.save(self._claims)
        return results

    async def _stall(self, method: str, block_knob: str, delay: float = 0.0) -> None:
        """Sleep for a delay knob, then wait while a block knob is on (counted in ``blocked`` meanwhile)."""
        await asyncio.sleep(delay)
        self.blocked[method] += 1
        try:
            await self._faults.wait_until_off(block_knob)
        finally:
            self.blocked[method] -= 1

    async def _prepare_claim(self, ref: ClaimRef, claim: dict[str, Any]) -> tuple[PreparedDevice, ...]:
        allocated = allocated_devices(claim, self._settings.driver_name)
        devices = [(result, self._check_device(ref, result)) for result in allocated]
        if devices and ref.uid not in self._claims:
            self._check_limit()
        configs = await opaque_configs(claim, self._settings.driver_name, self._resources.get_device_class)
        on_node = len(self._inventory.devices)
        if policy := refusal(self._faults, ref, self._settings.driver_name, allocated, configs, on_node):
            raise ClaimFailed(policy)
        qualified = not self._faults.get("cdi-unqualified")
        prepared, specs = [], []
        for result, device in devices:
            cdi_name = self._cdi.claim_device_name(ref.uid, device.name)
            env = [
                f"DRA_DEVICE_{_env_name(device.name)}_RESOURCE_CLAIM={ref.uid}",
                f"DRA_ADMIN_ACCESS={str(result.admin_access).lower()}",
                f"DRA_DEVICE_{device.index}={device.name}",
                f"DRA_DEVICE_{device.index}_REQUEST={result.base_request}",
            ]
            for config in configs:
                if config.applies_to(result):
                    env += config.env()
            specs.append(CDIDevice(cdi_name, tuple(env)))
            prepared.append(
                PreparedDevice(
                    request_names=(result.base_request,),
                    pool=result.pool,
                    device=result.device,
                    cdi_ids=(
                        self._cdi.common_id(qualified=qualified),
                        self._cdi.device_id(cdi_name, qualified=qualified),
                    ),
                    share_id=result.share_id,
                    admin_access=result.admin_access,
                )
            )
        if not self._faults.get("cdi-skip-write"):
            try:
                self._cdi.write_common()
                self._cdi.write_claim(ref.uid, specs)
            except OSError as err:
                raise ClaimFailed(f"write CDI spec into {self._cdi.root}: {err.strerror or err}") from err
        self._claims[ref.uid] = PreparedClaim(ref.uid, ref.namespace, ref.name, tuple(prepared))
        self._log.info("prepared claim", claim=str(ref), claimUID=ref.uid, devices=len(prepared))
        return tuple(prepared)

    def _check_device(self, ref: ClaimRef, result: AllocatedDevice) -> Device:
        device = self._inventory.get(result.device)
        if device is None or result.pool != self._settings.node_name:
            raise ClaimFailed(f"requested device is not allocatable: {result.pool}/{result.device}")
        if self._settings.config.sharing == "exclusive" and not result.admin_access:
            for other in self._claims.values():
                if other.uid != ref.uid and any(
                    d.pool == result.pool and d.device == result.device and not d.admin_access for d in other.devices
                ):
                    raise ClaimFailed(
                        f"device {result.pool}/{result.device} is already in use by claim"
                        f" {other.namespace}/{other.name} ({other.uid})"
                    )
        return device

    def _check_limit(self) -> None:
        limit = self._settings.config.max_allocations
        in_use = sum(1 for claim in self._claims.values() if claim.devices)
        if limit and in_use >= limit:
            raise ClaimFailed(f"node {self._settings.node_name} already has the maximum of {limit} prepared claims")

    def _distort(self, refs: list[ClaimRef], results: dict[str, PrepareResult]) -> dict[str, PrepareResult]:
        """Apply the answer-shaping fault knobs (leave a claim out, add a key nobody asked for)."""
        if omit := self._faults.get("prepare-omit-claim"):
            results = {
                uid: result
                for uid, result in results.items()
                if not any(ref.uid == uid and ref.matches(omit) for ref in refs)
            }
        if self._faults.get("prepare-unknown-key"):
            results[str(uuid.uuid4())] = PrepareResult()
        return results
