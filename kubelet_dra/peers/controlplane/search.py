"""The depth-first search kube-scheduler 1.36 runs to pick one claim's devices.

Every device a request needs is tried in turn and the first complete choice wins; when a later
device cannot fit (a counter set is used up, a capacity is short, a constraint fails), earlier
choices are undone and the next device is tried. Within one request the devices are picked in
slice order, each after the previous one, so a request never gets the same device twice; a shared
device may serve several requests of one claim. Measured against the real scheduler: a request for
two partitions skips the whole-GPU partition that would leave no counters for the second.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

import attrs

from kubelet_dra.peers.controlplane.offers import Candidate
from kubelet_dra.peers.controlplane.sharing import (
    Amount,
    CounterKey,
    DeviceKey,
    DoesNotFit,
    Usage,
    consumption,
    counters_consumed,
    format_quantity,
    quantity,
)

MAX_ATTEMPTS = 100_000
"""Devices tried for one claim before the search gives up, so a hopeless claim cannot stall the loop."""


@attrs.frozen
class Need:
    """One request as the search sees it: the devices its selectors admit and how many it takes."""

    name: str
    matching: tuple[Candidate, ...]
    count: int
    all_mode: bool
    capacity: Mapping[str, str]


@attrs.frozen
class Pick:
    """A device chosen for a request, with what it consumes of a shared device's capacities."""

    request: str
    candidate: Candidate
    consumed: Mapping[str, Amount]


@attrs.frozen
class Constraint:
    """A claim's ``matchAttribute`` or ``distinctAttribute`` over some (or all) of its requests."""

    requests: frozenset[str]
    attribute: str
    distinct: bool

    def applies(self, request: str) -> bool:
        """Whether the constraint covers ``request``; naming a request covers each of its subrequests."""
        return not self.requests or request in self.requests or request.split("/")[0] in self.requests

    def check(self, request: str, candidate: Candidate, picks: Sequence[Pick]) -> None:
        if not self.applies(request):
            return
        kind = "distinctAttribute" if self.distinct else "matchAttribute"
        value = _attribute(candidate, self.attribute)
        if value is None:
            raise DoesNotFit(f"{candidate.name}: has no attribute {self.attribute!r} ({kind})")
        others = [_attribute(p.candidate, self.attribute) for p in picks if self.applies(p.request)]
        if self.distinct and value in others:
            raise DoesNotFit(f"{candidate.name}: its {self.attribute} is another device's of this claim ({kind})")
        if not self.distinct and others and others[0] != value:
            raise DoesNotFit(f"{candidate.name}: its {self.attribute} differs from the claim's other devices ({kind})")


def _attribute(candidate: Candidate, name: str) -> tuple[str, Any] | None:
    """The typed value of a fully qualified attribute; the driver's own domain may be left out on the device."""
    attributes = candidate.device.get("attributes") or {}
    domain, _, short = name.partition("/")
    entry = attributes.get(name) or (attributes.get(short) if domain == candidate.driver else None)
    for kind in ("int", "bool", "string", "version"):
        if entry and kind in entry:
            return (kind, entry[kind])
    return None


@attrs.define
class Ledger:
    """What other claims hold, and the check of one more device against it and this claim's picks."""

    usage: Usage
    counters: Mapping[CounterKey, Amount]
    """Every shared counter's value."""
    devices: Mapping[DeviceKey, Mapping[str, Any]]
    """Every published device, to look up what an allocated one consumes."""
    used: dict[CounterKey, Decimal] = attrs.field(factory=dict)
    """Counters consumed by devices other claims hold."""

    def __attrs_post_init__(self) -> None:
        for key in self.usage.allocated:
            self._count(self.used, key, self.devices.get(key))

    @staticmethod
    def _count(used: dict[CounterKey, Decimal], key: DeviceKey, device: Mapping[str, Any] | None) -> None:
        for counter, amount in counters_consumed(key[0], key[1], device or {}).items():
            used[counter] = used.get(counter, Decimal(0)) + amount

    def check(self, candidate: Candidate, need: Need, picks: Sequence[Pick]) -> Pick:
        """``candidate`` for ``need`` after ``picks``; DoesNotFit says why it cannot be."""
        key, mine = candidate.key, {pick.candidate.key: pick for pick in picks}
        if key in self.usage.exclusive or (not candidate.shared and key in self.usage.allocated):
            raise DoesNotFit(f"{candidate.name}: in use")
        if not candidate.shared and key in mine:
            raise DoesNotFit(f"{candidate.name}: already given to request {mine[key].request!r} of this claim")
        amounts = consumption(candidate.device, need.capacity)
        self.check_capacity(candidate, amounts, picks)
        if not (candidate.shared and (key in self.usage.allocated or key in mine)):
            self._check_counters(candidate, picks)
        return Pick(need.name, candidate, amounts if candidate.shared else {})

    def check_capacity(self, candidate: Candidate, amounts: Mapping[str, Amount], picks: Sequence[Pick]) -> None:
        """DoesNotFit when ``amounts`` on top of what other claims and ``picks`` consume exceed a capacity."""
        held = self.usage.consumed.get(candidate.key, {})
        for name, amount in amounts.items():
            total = str((candidate.device.get("capacity") or {})[name].get("value", "0"))
            pending = sum((p.consumed[name].value for p in picks if p.candidate.key == candidate.key), Decimal(0))
            left = quantity(total) - held.get(name, Decimal(0)) - pending
            if amount.value > left:
                raise DoesNotFit(
                    f"{candidate.name}: capacity {name} has {format_quantity(left, total)} of {total} left,"
                    f" {amount} needed"
                )

    def _check_counters(self, candidate: Candidate, picks: Sequence[Pick]) -> None:
        """Every counter of the device's pool stays within its value with the device and this claim's picks."""
        consumes = counters_consumed(candidate.driver, candidate.pool, candidate.device)
        if not consumes:
            return
        used = dict(self.used)
        mine = {pick.candidate.key: pick.candidate.device for pick in picks}
        for key in mine.keys() - self.usage.allocated:
            self._count(used, key, mine[key])
        for counter, total in self.counters.items():
            if counter[:2] != candidate.key[:2]:
                continue
            left = total.value - used.get(counter, Decimal(0))
            needed = consumes.get(counter, Decimal(0))
            if needed > left:
                raise DoesNotFit(
                    f"{candidate.name}: counter {counter[3]} of {counter[2]} has"
                    f" {format_quantity(max(left, Decimal(0)), total.like)} left,"
                    f" {format_quantity(needed, total.like)} needed"
                )


@attrs.define
class Search:
    """One claim's search; ``refusals`` keep why devices were turned down for the request it got stuck on."""

    needs: Sequence[Need]
    constraints: Sequence[Constraint]
    ledger: Ledger
    picks: list[Pick] = attrs.field(factory=list)
    stuck: int = 0
    """The index of the furthest request the search reached."""
    refusals: dict[int, dict[str, str]] = attrs.field(factory=dict)
    limit: int = MAX_ATTEMPTS
    attempts: int = 0

    @property
    def gave_up(self) -> bool:
        return self.attempts > self.limit

    def run(self) -> list[Pick] | None:
        return list(self.picks) if self._fill(0, 0, 0) else None

    def _fill(self, index: int, filled: int, start: int) -> bool:
        """Devices for ``needs[index]`` from its ``filled``-th on, trying its matching devices from ``start``."""
        if index == len(self.needs):
            return True
        need = self.needs[index]
        if filled == need.count:
            return self._fill(index + 1, 0, 0)
        self.stuck = max(self.stuck, index)
        positions = [filled] if need.all_mode else range(start, len(need.matching))
        for position in positions:
            self.attempts += 1
            if self.gave_up:
                return False
            candidate = need.matching[position]
            try:
                pick = self.ledger.check(candidate, need, self.picks)
                for constraint in self.constraints:
                    constraint.check(need.name, candidate, self.picks)
            except DoesNotFit as why:
                self.refusals.setdefault(index, {})[candidate.name] = str(why)
                continue
            self.picks.append(pick)
            if self._fill(index, filled + 1, position + 1):
                return True
            self.picks.pop()
        return False
