"""Choosing devices for one ResourceClaim from the published ResourceSlices.

A pure function of its inputs, so it is tested without a cluster and the controller decides when
to call it. The choice is kube-scheduler's (``search``): a device is handed to one claim unless its
slice entry says ``allowMultipleAllocations``, in which case each allocation gets a ``shareID`` and
consumes capacity (``sharing``); devices consuming a pool's shared counters fit only while the
counters last; ``matchAttribute`` and ``distinctAttribute`` constraints hold; a ``firstAvailable``
request gets its first subrequest that fits.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import attrs

from kubelet_dra.peers.controlplane.cel import SelectorError, device_variable, matches
from kubelet_dra.peers.controlplane.offers import Candidate, candidates, newest_slices, pool_of
from kubelet_dra.peers.controlplane.search import Constraint, Ledger, Need, Pick, Search
from kubelet_dra.peers.controlplane.sharing import DoesNotFit, Usage, consumption, counter_sets

MAX_REASONS = 3
"""Refused devices named in an error message, so one for a big pool stays readable."""
MAX_CHOICES = 64
"""Combinations of ``firstAvailable`` subrequests tried before the claim is said not to fit."""


class Unsatisfiable(Exception):
    """A request of the claim cannot be served now; ``str()`` names the request and why."""

    def __init__(self, request: str, reason: str) -> None:
        super().__init__(f"request {request!r}: {reason}")
        self.request = request
        self.reason = reason


@attrs.frozen
class Allocation:
    """What ``status.allocation`` will say: one result per device, and the node when it matters."""

    results: tuple[dict[str, Any], ...]
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


def allocate(
    claim: Mapping[str, Any],
    *,
    node: str,
    slices: Iterable[Mapping[str, Any]],
    classes: Mapping[str, Mapping[str, Any]],
    in_use: Usage | None = None,
    share_id: Callable[[], str] = lambda: str(uuid.uuid4()),
) -> Allocation:
    """Devices for every request of ``claim`` on ``node``, around what the claims of ``in_use`` hold.

    A ``firstAvailable`` request is served by its first subrequest that can be, as kube-scheduler does:
    the choices of all such requests are tried in order of preference, and the first that fits wins."""
    slices = list(slices)
    devices = (claim.get("spec") or {}).get("devices") or {}
    first: Unsatisfiable | None = None
    for choice in itertools.islice(_choices(devices.get("requests") or []), MAX_CHOICES):
        try:
            return _allocate(choice, devices, node, slices, classes, in_use, share_id)
        except Unsatisfiable as err:
            first = first or err
    raise first or Unsatisfiable("", "the claim has no requests")


def _choices(requests: Iterable[Mapping[str, Any]]) -> Iterator[list[tuple[str, Mapping[str, Any]]]]:
    """Each way to serve the claim, most preferred first: (request name, its ``exactly``) per request, with
    ``request/subrequest`` names for the subrequest chosen of a ``firstAvailable`` request."""
    options: list[list[tuple[str, Mapping[str, Any]]]] = []
    for request in requests:
        name = str(request.get("name", ""))
        if request.get("exactly") is not None:
            options.append([(name, request["exactly"])])
        elif request.get("firstAvailable"):
            options.append([(f"{name}/{sub.get('name', '')}", sub) for sub in request["firstAvailable"]])
        else:
            raise Unsatisfiable(name, "a request needs 'exactly' or 'firstAvailable'")
    for choice in itertools.product(*options):
        yield list(choice)


def _allocate(
    choice: list[tuple[str, Mapping[str, Any]]],
    devices: Mapping[str, Any],
    node: str,
    slices: list[Mapping[str, Any]],
    classes: Mapping[str, Mapping[str, Any]],
    in_use: Usage | None,
    share_id: Callable[[], str],
) -> Allocation:
    offered = candidates(slices, node)
    current = newest_slices(slices)
    ledger = Ledger(
        usage=in_use or Usage(),
        counters=counter_sets(current),
        devices={
            (*pool_of(item), str(device.get("name"))): device
            for item in current
            for device in (item.get("spec") or {}).get("devices") or []
        },
    )
    needs: list[Need] = []
    config: list[dict[str, Any]] = []
    for name, exactly in choice:
        device_class = classes.get(exactly.get("deviceClassName", ""))
        if device_class is None:
            raise Unsatisfiable(name, f"DeviceClass {exactly.get('deviceClassName')!r} does not exist")
        needs.append(_need(name, exactly, device_class, offered, node, ledger))
        config += [
            {"source": "FromClass", "requests": [name], **entry}
            for entry in (device_class.get("spec") or {}).get("config") or []
        ]
    config += [{"source": "FromClaim", **entry} for entry in devices.get("config") or []]
    search = Search(needs, _constraints(devices.get("constraints") or []), ledger)
    picks = search.run()
    if picks is None:
        raise _why(search, node, ledger)
    local = any(pick.candidate.node_local for pick in picks)
    return Allocation(tuple(_result(pick, share_id) for pick in picks), tuple(config), node if local else None)


def _need(
    name: str,
    exactly: Mapping[str, Any],
    device_class: Mapping[str, Any],
    offered: list[Candidate],
    node: str,
    ledger: Ledger,
) -> Need:
    """The request's matching devices; for ``All``, those whose capacity can take the request."""
    expressions = [
        selector["cel"]["expression"]
        for selector in [*((device_class.get("spec") or {}).get("selectors") or []), *(exactly.get("selectors") or [])]
        if "cel" in selector
    ]
    try:
        matching = [c for c in offered if all(matches(e, device_variable(c.driver, c.device)) for e in expressions)]
    except SelectorError as err:
        raise Unsatisfiable(name, str(err)) from err
    if not matching:
        raise Unsatisfiable(name, f"no device on node {node!r} matches the selectors ({len(offered)} devices checked)")
    capacity: Mapping[str, str] = (exactly.get("capacity") or {}).get("requests") or {}
    if exactly.get("allocationMode", "ExactCount") != "All":
        return Need(name, tuple(matching), int(exactly.get("count", 1)), False, capacity)
    whole, short = [], []
    for candidate in matching:
        try:
            ledger.check_capacity(candidate, consumption(candidate.device, capacity), [])
            whole.append(candidate)
        except DoesNotFit as why:
            short.append(str(why))
    if not whole:
        reasons = "; ".join(short[:MAX_REASONS])
        raise Unsatisfiable(name, f"allocationMode All: no matching device on node {node!r} can serve it ({reasons})")
    return Need(name, tuple(whole), len(whole), True, capacity)


def _constraints(entries: Iterable[Mapping[str, Any]]) -> list[Constraint]:
    return [
        Constraint(
            frozenset(entry.get("requests") or []),
            str(entry.get("distinctAttribute") or entry.get("matchAttribute")),
            "distinctAttribute" in entry,
        )
        for entry in entries
        if entry.get("distinctAttribute") or entry.get("matchAttribute")
    ]


def _result(pick: Pick, share_id: Callable[[], str]) -> dict[str, Any]:
    candidate = pick.candidate
    result: dict[str, Any] = {
        "request": pick.request,
        "driver": candidate.driver,
        "pool": candidate.pool,
        "device": candidate.name,
    }
    if candidate.shared:
        result["shareID"] = share_id()
        if pick.consumed:
            result["consumedCapacity"] = {name: str(amount) for name, amount in pick.consumed.items()}
    if candidate.skip_node_operations:
        result["skipNodeOperations"] = list(candidate.skip_node_operations)
    return result


def _why(search: Search, node: str, ledger: Ledger) -> Unsatisfiable:
    """The request the search got stuck on, how many devices fit it alone and why the others did not."""
    need = search.needs[search.stuck]
    where = f"on node {node!r}"
    if search.gave_up:
        return Unsatisfiable(need.name, f"gave up after trying {search.limit} device choices {where}")
    free = 0
    for candidate in need.matching:
        try:
            ledger.check(candidate, need, [])
            free += 1
        except DoesNotFit:
            pass
    refused = list(search.refusals.get(search.stuck, {}).values())
    reasons = f" ({'; '.join(refused[:MAX_REASONS])})" if refused else ""
    if need.all_mode:
        wanted = f"allocationMode All needs all {len(need.matching)} matching devices {where}"
        return Unsatisfiable(need.name, f"{wanted}, {free} fit{reasons}")
    counted = f"needs {need.count} device(s), {free} of {len(need.matching)} matching devices {where} fit"
    if free >= need.count:
        counted += " alone but not together with the claim's other devices"
    return Unsatisfiable(need.name, counted + reasons)
