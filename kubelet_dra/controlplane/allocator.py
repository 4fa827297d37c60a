"""Choosing devices for one ResourceClaim from the published ResourceSlices.

A pure function of its inputs, so it is tested without a cluster and the controller decides when
to call it. Requests are served in order, greedily (no backtracking between requests); a device
is handed to one claim unless its slice entry says ``allowMultipleAllocations``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from kubelet_dra.controlplane.cel import SelectorError, device_variable, matches

DeviceKey = tuple[str, str, str]
"""(driver, pool, device): a device's identity across the cluster."""


class Unsatisfiable(Exception):
    """A request of the claim cannot be served now; ``str()`` names the request and why."""

    def __init__(self, request: str, reason: str) -> None:
        super().__init__(f"request {request!r}: {reason}")
        self.request = request
        self.reason = reason


@attrs.frozen
class Candidate:
    """A device of the current generation of its pool that the node can reach."""

    driver: str
    pool: str
    device: dict[str, Any]
    node_local: bool
    shared: bool

    @property
    def key(self) -> DeviceKey:
        return (self.driver, self.pool, str(self.device.get("name")))


@attrs.frozen
class Allocation:
    """What ``status.allocation`` will say: one result per device, and the node when it matters."""

    results: tuple[dict[str, str], ...]
    config: tuple[dict[str, Any], ...]
    node: str | None
    """The node the devices are local to; ``None`` when all of them are reachable from every node."""

    def to_status(self) -> dict[str, Any]:
        devices: dict[str, Any] = {"results": list(self.results)}
        if self.config:
            devices["config"] = list(self.config)
        status: dict[str, Any] = {"devices": devices}
        if self.node is not None:
            term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [self.node]}]}
            status["nodeSelector"] = {"nodeSelectorTerms": [term]}
        return status


def allocated_keys(claim: Mapping[str, Any]) -> frozenset[DeviceKey]:
    """The devices an existing claim holds."""
    results = (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
    return frozenset((r["driver"], r["pool"], r["device"]) for r in results)


def candidates(slices: Iterable[Mapping[str, Any]], node: str) -> list[Candidate]:
    """Devices of the newest generation of each pool, from slices local to ``node`` or to all nodes.

    Slices restricted by a node selector or per-device node selection are not offered: deciding
    them needs node labels this allocator does not evaluate.
    """
    newest: dict[tuple[str, str], int] = {}
    for item in slices:
        spec = item.get("spec") or {}
        pool_key = (spec.get("driver", ""), (spec.get("pool") or {}).get("name", ""))
        newest[pool_key] = max(newest.get(pool_key, 0), int((spec.get("pool") or {}).get("generation", 0)))
    found: list[Candidate] = []
    for item in slices:
        spec = item.get("spec") or {}
        driver, pool = spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")
        if int((spec.get("pool") or {}).get("generation", 0)) != newest[(driver, pool)]:
            continue
        local = spec.get("nodeName") == node
        if not local and not spec.get("allNodes"):
            continue
        found += [
            Candidate(driver, pool, device, local, bool(device.get("allowMultipleAllocations")))
            for device in spec.get("devices") or []
        ]
    return found


def allocate(
    claim: Mapping[str, Any],
    *,
    node: str,
    slices: Iterable[Mapping[str, Any]],
    classes: Mapping[str, Mapping[str, Any]],
    in_use: frozenset[DeviceKey] = frozenset(),
) -> Allocation:
    """Devices for every request of ``claim`` on ``node``, avoiding exclusive devices in ``in_use``."""
    offered = candidates(slices, node)
    devices = (claim.get("spec") or {}).get("devices") or {}
    taken: set[DeviceKey] = set()
    results: list[dict[str, str]] = []
    config: list[dict[str, Any]] = []
    chosen: list[Candidate] = []
    for request in devices.get("requests") or []:
        name = str(request.get("name", ""))
        exactly = request.get("exactly")
        if exactly is None:
            raise Unsatisfiable(name, "only 'exactly' requests are supported (firstAvailable is not)")
        device_class = classes.get(exactly.get("deviceClassName", ""))
        if device_class is None:
            raise Unsatisfiable(name, f"DeviceClass {exactly.get('deviceClassName')!r} does not exist")
        picked = _serve(name, exactly, device_class, offered, node, in_use, taken)
        taken.update(candidate.key for candidate in picked)
        chosen += picked
        results += [{"request": name, "driver": c.driver, "pool": c.pool, "device": c.key[2]} for c in picked]
        config += [
            {"source": "FromClass", "requests": [name], **entry}
            for entry in (device_class.get("spec") or {}).get("config") or []
        ]
    config += [{"source": "FromClaim", **entry} for entry in devices.get("config") or []]
    local = any(candidate.node_local for candidate in chosen)
    return Allocation(tuple(results), tuple(config), node if local else None)


def _serve(
    name: str,
    exactly: Mapping[str, Any],
    device_class: Mapping[str, Any],
    offered: list[Candidate],
    node: str,
    in_use: frozenset[DeviceKey],
    taken: set[DeviceKey],
) -> list[Candidate]:
    """The devices for one request; ``taken`` are this claim's own picks (never reused, shared or not)."""
    expressions = [
        selector["cel"]["expression"]
        for selector in [*((device_class.get("spec") or {}).get("selectors") or []), *(exactly.get("selectors") or [])]
        if "cel" in selector
    ]
    try:
        matching = [c for c in offered if all(matches(e, device_variable(c.driver, c.device)) for e in expressions)]
    except SelectorError as err:
        raise Unsatisfiable(name, str(err)) from err
    free = [c for c in matching if c.key not in taken and (c.shared or c.key not in in_use)]
    where = f"on node {node!r}"
    if not matching:
        raise Unsatisfiable(name, f"no device {where} matches the selectors ({len(offered)} devices checked)")
    if exactly.get("allocationMode", "ExactCount") == "All":
        if len(free) < len(matching):
            raise Unsatisfiable(
                name, f"allocationMode All needs all {len(matching)} matching devices {where}, {len(free)} are free"
            )
        return free
    count = int(exactly.get("count", 1))
    if len(free) < count:
        raise Unsatisfiable(
            name, f"needs {count} device(s), {len(free)} of {len(matching)} matching devices {where} are free"
        )
    return free[:count]
