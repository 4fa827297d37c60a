"""The claim info cache: what this node has prepared (or is preparing) for which pods.

One entry per ResourceClaim, keyed ``<namespace>/<claimName>`` like the kubelet's cache. An entry
remembers the pods using the claim and, per driver, the devices the driver reported (its latest
successful answer, docs/releases.md: in 1.36.x and 1.37 alike) and the node operations skipped for
it. Whether the claim is prepared, or being unprepared, is known only in memory: after a restart
every entry loaded from the checkpoint counts as not prepared.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from kubelet_dra.kubelet.cm.dra.claims import ClaimError
from kubelet_dra.kubelet.cm.dra.skips import GATE_DISABLED, OptionalOperations, asks_to_skip, driver_skips, operations
from kubelet_dra.kubelet.cm.dra.state.checkpoint import Checkpoint, ClaimInfoState, DeviceState, Encoder
from kubelet_dra.kubelet.cm.dra.state.checkpointer import GroupCommit
from kubelet_dra.kubelet.metrics.metrics import ANY_DRIVER
from kubelet_dra.peers.api import dra_v1_pb2
from kubelet_dra.peers.errors import StateError

INLINE_ENTRIES = 64
"""Up to this many entries (a file of a few tens of KB) the checkpoint is written in the event loop (``commit``)."""


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


def _frozen_uids(uids: Iterable[str]) -> frozenset[str]:
    return frozenset(uids)


def _frozen_devices(state: Mapping[str, Iterable[DeviceState]]) -> Mapping[str, tuple[DeviceState, ...]]:
    return MappingProxyType({driver: tuple(devices) for driver, devices in state.items()})


@attrs.define(on_setattr=attrs.setters.frozen)
class ClaimInfo:
    """A cache entry. Every field is what the checkpoint stores, and read-only, except the two the kubelet keeps
    in memory only (``prepared``, ``unpreparing``): a stored field changes only through ``ClaimInfoCache``, which
    writes the change to the next checkpoint and keeps its index of pods in step (a field added later is
    read-only too, so it cannot change without reaching the file). The entry's checkpoint form is built once
    per change, not once per write of the file (which has every entry)."""

    claim_uid: str
    claim_name: str
    namespace: str
    pod_uids: frozenset[str] = attrs.field(factory=frozenset, converter=_frozen_uids)
    """Changed by ``ClaimInfoCache.add_pod``/``remove_pod``."""
    driver_state: Mapping[str, tuple[DeviceState, ...]] = attrs.field(factory=dict, converter=_frozen_devices)
    """Driver name → devices, one key per driver of the allocation even while it has no devices; changed by
    ``ClaimInfoCache.set_devices``."""
    skip_node_operations: dict[str, frozenset[str]] = attrs.field(factory=dict)
    """Driver name → the node operations not called for it; drivers that skip none are absent (fixed at creation)."""
    prepared: bool = attrs.field(default=False, on_setattr=attrs.setters.NO_OP)
    unpreparing: bool = attrs.field(default=False, on_setattr=attrs.setters.NO_OP)
    """``NodeUnprepareResources`` is under way for the last pod: a 1.37 prepare must not join the claim now."""
    _state: ClaimInfoState | None = attrs.field(
        default=None, init=False, eq=False, repr=False, on_setattr=attrs.setters.NO_OP
    )

    def _replace(self, **changes: Any) -> None:
        """Change stored fields in place (converted as at creation); only ``ClaimInfoCache`` calls this."""
        changed = attrs.evolve(self, **changes)
        for name in changes:
            object.__setattr__(self, name, getattr(changed, name))
        self._state = None

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
            pod_uids=state.pod_uids,
            driver_state=state.driver_state,
            skip_node_operations={driver: ops for driver, ops in skips.items() if ops} if read_skips else {},
        )

    def to_state(self) -> ClaimInfoState:
        """The entry as the checkpoint stores it; the same object until the entry changes."""
        if self._state is None:
            self._state = ClaimInfoState(
                claim_uid=self.claim_uid,
                claim_name=self.claim_name,
                namespace=self.namespace,
                pod_uids=self.pod_uids,
                driver_state=self.driver_state,
                skip_node_operations={driver: tuple(sorted(ops)) for driver, ops in self.skip_node_operations.items()},
            )
        return self._state

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


def _get_or_create(checkpoint: Checkpoint) -> list[ClaimInfoState]:
    """The stored entries, read as ``newClaimInfoCache`` reads them (``pkg/kubelet/cm/dra/claiminfo.go``), whose
    error wraps that of the checkpointer's ``GetOrCreate`` (``pkg/kubelet/cm/dra/state/checkpointer.go``), the
    function ``Checkpoint.load`` mirrors."""
    try:
        return checkpoint.load()
    except StateError as err:
        get_or_create = err.wrapped(f"failed to get checkpoint {Checkpoint.FILE_NAME}")  # checkpointer.GetOrCreate
        raise get_or_create.wrapped("GetOrCreate() on checkpoint state") from err  # newClaimInfoCache


class ClaimInfoCache:
    """The entries, loaded from the checkpoint at start and written back whole on every change (group commit).

    The entries of a pod are indexed by its UID: unpreparing a pod must not scan every claim on the node.
    """

    def __init__(self, checkpoint: Checkpoint, *, read_skips: bool = True) -> None:
        self._entries: dict[str, ClaimInfo] = {}
        self._by_pod: dict[str, dict[str, None]] = {}
        """Pod UID → keys of the entries referencing it, in the order the references were made."""
        self._changed: dict[str, None] = {}
        """Keys of the entries added, changed or deleted since the last checkpoint write began."""
        self._encoder = Encoder()
        self._checkpoint = checkpoint
        for state in _get_or_create(checkpoint):
            self.add(ClaimInfo.from_state(state, read_skips=read_skips))
        self._commit = GroupCommit(self._changes, self._write, inline=lambda: len(self._entries) <= INLINE_ENTRIES)

    def get(self, namespace: str, name: str) -> ClaimInfo | None:
        return self._entries.get(claim_key(namespace, name))

    def get_in_use(self, namespace: str, name: str) -> ClaimInfo:
        """The entry of a claim a pod uses: the manager added it before, so its absence is the kubelet's internal
        error (as ``prepareResources`` in ``pkg/kubelet/cm/dra/manager.go`` words it)."""
        info = self.get(namespace, name)
        if info is None:
            raise ClaimError(
                f"internal error: unable to get claim info for ResourceClaim {name} in namespace {namespace}"
            )
        return info

    def add(self, info: ClaimInfo) -> None:
        self.delete(info.namespace, info.claim_name)
        self._entries[info.key] = info
        for pod_uid in info.pod_uids:
            self._by_pod.setdefault(pod_uid, {})[info.key] = None
        self._mark_changed(info)

    def delete(self, namespace: str, name: str) -> None:
        info = self._entries.pop(claim_key(namespace, name), None)
        if info is None:
            return
        for pod_uid in info.pod_uids:
            self._forget_reference(pod_uid, info.key)
        self._mark_changed(info)

    def add_pod(self, info: ClaimInfo, pod_uid: str) -> None:
        """``info`` (an entry of this cache) is used by the pod too."""
        self._change(info, pod_uids=info.pod_uids | {pod_uid})
        self._by_pod.setdefault(pod_uid, {})[info.key] = None

    def remove_pod(self, info: ClaimInfo, pod_uid: str) -> None:
        """``info`` (an entry of this cache) is no longer used by the pod."""
        self._change(info, pod_uids=info.pod_uids - {pod_uid})
        self._forget_reference(pod_uid, info.key)

    def set_devices(self, info: ClaimInfo, driver: str, devices: Iterable[DeviceState], *, replace: bool) -> None:
        """The driver's answer for ``info`` (an entry of this cache): it replaces what the driver said before (1.37,
        docs/releases.md), or is appended to it (v1.36.2, docs/protocol.md#dra-manager: a claim prepared again
        holds its devices twice)."""
        kept = () if replace else info.driver_state.get(driver, ())
        self._change(info, driver_state={**info.driver_state, driver: (*kept, *devices)})

    def _change(self, info: ClaimInfo, **fields: Any) -> None:
        """The one way a stored field of an entry changes: the change is what the next checkpoint write encodes."""
        info._replace(**fields)
        self._mark_changed(info)

    def _forget_reference(self, pod_uid: str, key: str) -> None:
        keys = self._by_pod.get(pod_uid, {})
        keys.pop(key, None)
        if not keys:
            self._by_pod.pop(pod_uid, None)

    def __len__(self) -> int:
        return len(self._entries)

    def has_pod_reference(self, pod_uid: str) -> bool:
        return pod_uid in self._by_pod

    def claim_names_for_pod(self, pod_uid: str) -> list[str]:
        """Names of the claims that reference the pod (all in its namespace: a pod uses claims of its own)."""
        return [self._entries[key].claim_name for key in self._by_pod.get(pod_uid, {})]

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
        active = set(active_pod_uids)
        inactive: dict[tuple[str, str], list[str]] = {}
        for pod_uid, keys in self._by_pod.items():
            if pod_uid not in active:
                for info in map(self._entries.__getitem__, keys):
                    inactive.setdefault((pod_uid, info.namespace), []).append(info.claim_name)
        return inactive

    async def sync_to_checkpoint(self) -> None:
        """Return once the entries as they are now are in the checkpoint (a write may cover other callers' too)."""
        await self._commit.sync()

    def _mark_changed(self, info: ClaimInfo) -> None:
        self._changed[info.key] = None

    def _changes(self) -> dict[str, ClaimInfoState | None]:
        """Taken in the event loop when a write begins: what changed, as it is now (``None``: deleted)."""
        changes = {key: info.to_state() if (info := self._entries.get(key)) else None for key in self._changed}
        self._changed = {}
        return changes

    def _write(self, changes: dict[str, ClaimInfoState | None]) -> None:
        """In the writer thread (one write at a time): encode what changed, replace the file."""
        self._checkpoint.write(self._encoder.apply(changes))
