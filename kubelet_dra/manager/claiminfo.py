"""The claim info cache: what this node has prepared (or is preparing) for which pods.

One entry per ResourceClaim, keyed ``<namespace>/<claimName>`` like the kubelet's cache. An entry
remembers the pods using the claim and, per driver, the devices the driver reported (its latest
successful answer: SPEC-1.37.md §2.6, in 1.36.x and 1.37 alike) and the node operations skipped for
it. Whether the claim is prepared, or being unprepared, is known only in memory: after a restart
every entry loaded from the checkpoint counts as not prepared.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import attrs

from kubelet_dra.api import dra_v1_pb2
from kubelet_dra.manager.checkpoint import Checkpoint, ClaimInfoState, DeviceState
from kubelet_dra.manager.claims import ClaimError
from kubelet_dra.manager.commit import GroupCommit
from kubelet_dra.manager.skips import GATE_DISABLED, OptionalOperations, asks_to_skip, driver_skips, operations
from kubelet_dra.metrics import ANY_DRIVER


def claim_key(namespace: str, name: str) -> str:
    return f"{namespace}/{name}"


def device_state(device: dra_v1_pb2.Device) -> DeviceState:
    """A device from a driver's answer as the checkpoint stores it (an unset share ID stays unset)."""
    return DeviceState(
        pool_name=device.pool_name,
        device_name=device.device_name,
        share_id=device.share_id if device.HasField("share_id") else None,
        request_names=tuple(device.request_names),
        cdi_device_ids=tuple(device.cdi_device_ids),
    )


@attrs.define
class ClaimInfo:
    claim_uid: str
    claim_name: str
    namespace: str
    pod_uids: set[str] = attrs.field(factory=set)
    driver_state: dict[str, list[DeviceState]] = attrs.field(factory=dict)
    """Driver name → devices, one key per driver of the allocation even while it has no devices."""
    skip_node_operations: dict[str, frozenset[str]] = attrs.field(factory=dict)
    """Driver name → the node operations not called for it; drivers that skip none are absent."""
    prepared: bool = False
    unpreparing: bool = False
    """``NodeUnprepareResources`` is under way for the last pod: a 1.37 prepare must not join the claim now."""

    @property
    def key(self) -> str:
        return claim_key(self.namespace, self.claim_name)

    @classmethod
    def from_claim(cls, claim: Mapping[str, Any], optional: OptionalOperations) -> ClaimInfo:
        """A new entry for an allocated claim, with the drivers of its allocation results and no devices yet."""
        meta = claim.get("metadata") or {}
        allocation = (claim.get("status") or {}).get("allocation")
        if not allocation:
            raise ClaimError(f"ResourceClaim {meta.get('name', '')}: not allocated")
        results = (allocation.get("devices") or {}).get("results") or []
        if optional is OptionalOperations.DISABLED and asks_to_skip(results):
            raise ClaimError(f"ResourceClaim {meta.get('name', '')}: {GATE_DISABLED}")
        return cls(
            claim_uid=str(meta.get("uid", "")),
            claim_name=str(meta.get("name", "")),
            namespace=str(meta.get("namespace", "")),
            driver_state={str(result.get("driver", "")): [] for result in results},
            skip_node_operations=driver_skips(results) if optional is OptionalOperations.ENABLED else {},
        )

    def skips(self, driver: str, operation: str) -> bool:
        return operation in self.skip_node_operations.get(driver, ())

    @classmethod
    def from_state(cls, state: ClaimInfoState, *, read_skips: bool) -> ClaimInfo:
        """An entry from the checkpoint; without ``read_skips`` (a 1.36 kubelet) ``SkipNodeOperations`` is ignored."""
        skips = {driver: operations(values) for driver, values in state.skip_node_operations.items()}
        return cls(
            claim_uid=state.claim_uid,
            claim_name=state.claim_name,
            namespace=state.namespace,
            pod_uids=set(state.pod_uids),
            driver_state={driver: list(devices) for driver, devices in state.driver_state.items()},
            skip_node_operations={driver: ops for driver, ops in skips.items() if ops} if read_skips else {},
        )

    def to_state(self) -> ClaimInfoState:
        return ClaimInfoState(
            claim_uid=self.claim_uid,
            claim_name=self.claim_name,
            namespace=self.namespace,
            pod_uids=frozenset(self.pod_uids),
            driver_state={driver: tuple(devices) for driver, devices in self.driver_state.items()},
            skip_node_operations={driver: tuple(sorted(ops)) for driver, ops in self.skip_node_operations.items()},
        )

    def cdi_device_ids(self, request_name: str = "", *, driver: str | None = None) -> list[str]:
        """CDI IDs of the devices serving ``request_name`` (all devices when it is empty), of one driver or all."""
        return [
            cdi_id
            for name, devices in self.driver_state.items()
            if driver is None or name == driver
            for device in devices
            if not request_name or not device.request_names or request_name in device.request_names
            for cdi_id in device.cdi_device_ids
        ]


class ClaimInfoCache:
    """The entries, loaded from the checkpoint at start and written back whole on every change (group commit)."""

    def __init__(self, checkpoint: Checkpoint, *, read_skips: bool = True) -> None:
        self._entries: dict[str, ClaimInfo] = {}
        for state in checkpoint.load():
            info = ClaimInfo.from_state(state, read_skips=read_skips)
            self._entries[info.key] = info
        self._commit = GroupCommit(self._states, checkpoint.store)

    def get(self, namespace: str, name: str) -> ClaimInfo | None:
        return self._entries.get(claim_key(namespace, name))

    def add(self, info: ClaimInfo) -> None:
        self._entries[info.key] = info

    def delete(self, namespace: str, name: str) -> None:
        self._entries.pop(claim_key(namespace, name), None)

    def __len__(self) -> int:
        return len(self._entries)

    def has_pod_reference(self, pod_uid: str) -> bool:
        return any(pod_uid in info.pod_uids for info in self._entries.values())

    def claim_names_for_pod(self, pod_uid: str) -> list[str]:
        """Names of the claims that reference the pod (all in its namespace: a pod uses claims of its own)."""
        return [info.claim_name for info in self._entries.values() if pod_uid in info.pod_uids]

    def claims_in_use(self) -> dict[str, int]:
        """Prepared claims per driver and in total (``<any>``); entries only loaded from the checkpoint are not."""
        counts = {ANY_DRIVER: 0}
        for info in self._entries.values():
            if info.prepared:
                counts[ANY_DRIVER] += 1
                for driver in info.driver_state:
                    counts[driver] = counts.get(driver, 0) + 1
        return counts

    def inactive_pods(self, active_pod_uids: Collection[str]) -> dict[tuple[str, str], list[str]]:
        """(pod UID, namespace) → names of the claims still referencing each pod that is not active."""
        inactive: dict[tuple[str, str], list[str]] = {}
        for info in self._entries.values():
            for pod_uid in sorted(info.pod_uids - set(active_pod_uids)):
                inactive.setdefault((pod_uid, info.namespace), []).append(info.claim_name)
        return inactive

    async def sync_to_checkpoint(self) -> None:
        """Return once the entries as they are now are in the checkpoint (a write may cover other callers' too)."""
        await self._commit.sync()

    def _states(self) -> list[ClaimInfoState]:
        return [info.to_state() for info in self._entries.values()]
