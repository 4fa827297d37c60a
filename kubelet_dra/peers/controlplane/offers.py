"""The devices a node can be given: those of the newest generation of each pool that reach the node."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from kubelet_dra.peers.controlplane.sharing import DeviceKey


@attrs.frozen
class Candidate:
    """A device of the current generation of its pool that the node can reach."""

    driver: str
    pool: str
    device: Mapping[str, Any]
    node_local: bool
    shared: bool
    skip_node_operations: tuple[str, ...] = ()
    """The slice's ``skipNodeOperations`` (1.37): the scheduler copies them into the allocation result."""

    @property
    def key(self) -> DeviceKey:
        return (self.driver, self.pool, self.name)

    @property
    def name(self) -> str:
        return str(self.device.get("name"))


def pool_of(item: Mapping[str, Any]) -> tuple[str, str]:
    spec = item.get("spec") or {}
    return spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")


def _generation(item: Mapping[str, Any]) -> int:
    return int(((item.get("spec") or {}).get("pool") or {}).get("generation", 0))


def newest_slices(slices: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The slices of the newest generation of each pool: older ones are being replaced."""
    slices = list(slices)
    newest: dict[tuple[str, str], int] = {}
    for item in slices:
        newest[pool_of(item)] = max(newest.get(pool_of(item), 0), _generation(item))
    return [item for item in slices if _generation(item) == newest[pool_of(item)]]


def candidates(slices: Iterable[Mapping[str, Any]], node: str) -> list[Candidate]:
    """Devices of the newest generation of each pool, from slices local to ``node`` or to all nodes.

    Slices restricted by a node selector or per-device node selection are not offered: deciding
    them needs node labels this allocator does not evaluate.
    """
    found: list[Candidate] = []
    for item in newest_slices(slices):
        spec = item.get("spec") or {}
        driver, pool = pool_of(item)
        local = spec.get("nodeName") == node
        if not local and not spec.get("allNodes"):
            continue
        skips = tuple(spec.get("skipNodeOperations") or ())
        found += [
            Candidate(driver, pool, device, local, bool(device.get("allowMultipleAllocations")), skips)
            for device in spec.get("devices") or []
        ]
    return found
