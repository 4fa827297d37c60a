"""What allocated devices use up: consumable capacity of shared devices and counters of partitions.

A device that allows multiple allocations is handed out again and again, each allocation consuming
an amount of each of its capacities (what the request asks for, rounded up to what the device's
``requestPolicy`` allows, else the policy's default, else all of it) until a capacity is used up.
Devices that consume a pool's shared counters (partitions of one GPU) fit only while the counters
they consume, summed over every allocated device (a shared one counts once), stay within the counter
set's values. This is what kube-scheduler 1.36 does (measured against ../shared/interop's control
plane: a 2500Mi bandwidth request on a device with a 1Gi..8Gi range in steps of 1Gi consumes 3Gi; a
capacity without policy or request is consumed whole; a request naming a capacity the device lacks,
or one above the range's max or every valid value, skips the device).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

import attrs

from kubelet_dra.peers.quantity import parse_quantity

DeviceKey = tuple[str, str, str]
"""(driver, pool, device): a device's identity across the cluster."""
CounterKey = tuple[str, str, str, str]
"""(driver, pool, counter set, counter)."""

_DECIMAL_SUFFIXES = {-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
_BINARY_SUFFIXES = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")


class DoesNotFit(Exception):
    """A device cannot serve one more allocation; ``str()`` says which capacity or counter is short."""


def quantity(text: Any) -> Decimal:
    return parse_quantity(text)


def format_quantity(value: Decimal, like: str) -> str:
    """``value`` as Kubernetes writes a quantity parsed from ``like`` (binary ``Gi``, decimal ``G`` or ``e9``).

    Go's canonical form: binary units only for whole multiples of 1024 (1536 stays "1536"), else the
    largest power of 1000 that leaves a whole number ("1500", "2k", "500m").
    """
    text = str(like).strip()
    if text.endswith("i") and abs(value) >= 1024 and value == value.to_integral_value():
        number, power = int(value), 0
        while number % 1024 == 0 and power < len(_BINARY_SUFFIXES) - 1:
            number, power = number // 1024, power + 1
        return f"{number}{_BINARY_SUFFIXES[power]}"
    if value == 0:
        return "0"
    exponent = 18
    while exponent > -9 and (value / Decimal(10) ** exponent) != (value / Decimal(10) ** exponent).to_integral_value():
        exponent -= 3
    number = math.ceil(value / Decimal(10) ** exponent)
    exponential = any(mark in text.lstrip("+-") for mark in "eE")
    suffix = (f"e{exponent}" if exponent else "") if exponential else _DECIMAL_SUFFIXES[exponent]
    return f"{number}{suffix}"


@attrs.frozen
class Amount:
    """An amount of a capacity and the quantity it came from, whose units Kubernetes writes it in."""

    value: Decimal
    like: str

    def __str__(self) -> str:
        return format_quantity(self.value, self.like)


def consumption(device: Mapping[str, Any], requested: Mapping[str, str]) -> dict[str, Amount]:
    """What one allocation of ``device`` consumes of each of its capacities, for a request asking ``requested``.

    DoesNotFit when the request names a capacity the device lacks or asks what its policy forbids.
    """
    capacities: Mapping[str, Any] = device.get("capacity") or {}
    missing = sorted(set(requested) - set(capacities))
    if missing:
        raise DoesNotFit(f"{device.get('name')}: has no capacity {missing[0]!r}")
    consumed: dict[str, Amount] = {}
    for name, capacity in capacities.items():
        policy = capacity.get("requestPolicy") or {}
        if name in requested:
            amount = _rounded(Amount(quantity(requested[name]), str(requested[name])), policy)
        elif "default" in policy:
            amount = Amount(quantity(policy["default"]), str(policy["default"]))
        else:
            amount = Amount(quantity(capacity.get("value", "0")), str(capacity.get("value", "0")))
        _check_policy(str(device.get("name")), name, amount, policy)
        consumed[name] = amount
    return consumed


def _rounded(amount: Amount, policy: Mapping[str, Any]) -> Amount:
    """``amount`` rounded up to the smallest amount ``policy`` allows (left alone when none is big enough)."""
    bounds = policy.get("validRange") or {}
    if "min" in bounds:
        low = quantity(bounds["min"])
        if amount.value < low:
            return Amount(low, str(bounds["min"]))
        if "step" not in bounds:
            return amount
        start, step = math.ceil(low), math.ceil(quantity(bounds["step"]))
        return Amount(Decimal(start + math.ceil((math.ceil(amount.value) - start) / step) * step), str(bounds["step"]))
    for text in policy.get("validValues") or []:
        if amount.value <= quantity(text):
            return Amount(quantity(text), str(text))
    return amount


def _check_policy(device: str, name: str, amount: Amount, policy: Mapping[str, Any]) -> None:
    if "default" in policy and amount.value == quantity(policy["default"]):
        return
    bounds = policy.get("validRange")
    if bounds is not None:
        if "max" in bounds and amount.value > quantity(bounds["max"]):
            raise DoesNotFit(f"{device}: {name} {amount} is above the valid range's max {bounds['max']}")
        if "step" in bounds:
            start, step = math.ceil(quantity(bounds.get("min", "0"))), math.ceil(quantity(bounds["step"]))
            if (math.ceil(amount.value) - start) % step:
                raise DoesNotFit(f"{device}: {name} {amount} is not {bounds.get('min')} plus a multiple of {step}")
    elif policy.get("validValues") and all(amount.value != quantity(v) for v in policy["validValues"]):
        raise DoesNotFit(f"{device}: {name} {amount} is above every valid value")


def counter_sets(slices: Iterable[Mapping[str, Any]]) -> dict[CounterKey, Amount]:
    """Every shared counter of the given (newest-generation) slices and its value."""
    values: dict[CounterKey, Amount] = {}
    for item in slices:
        spec = item.get("spec") or {}
        driver, pool = spec.get("driver", ""), (spec.get("pool") or {}).get("name", "")
        for counter_set in spec.get("sharedCounters") or []:
            for counter, entry in (counter_set.get("counters") or {}).items():
                text = str(entry.get("value", "0"))
                values[(driver, pool, counter_set.get("name", ""), counter)] = Amount(quantity(text), text)
    return values


def counters_consumed(driver: str, pool: str, device: Mapping[str, Any]) -> dict[CounterKey, Decimal]:
    """The shared counters an allocated ``device`` consumes."""
    return {
        (driver, pool, entry.get("counterSet", ""), counter): quantity(amount.get("value", "0"))
        for entry in device.get("consumesCounters") or []
        for counter, amount in (entry.get("counters") or {}).items()
    }


@attrs.define
class Usage:
    """What the allocations made so far hold: exclusive devices, capacity consumed on shared ones, and
    every allocated device (whose counter consumption the allocator looks up in the slices)."""

    exclusive: set[DeviceKey] = attrs.field(factory=set)
    consumed: dict[DeviceKey, dict[str, Decimal]] = attrs.field(factory=dict)
    allocated: set[DeviceKey] = attrs.field(factory=set)

    @classmethod
    def of(cls, claims: Iterable[Mapping[str, Any]]) -> Usage:
        usage = cls()
        for claim in claims:
            usage.add(claim)
        return usage

    def copy(self) -> Usage:
        return Usage(set(self.exclusive), {k: dict(v) for k, v in self.consumed.items()}, set(self.allocated))

    def add(self, claim: Mapping[str, Any]) -> None:
        """Count an allocated claim's devices in."""
        allocation = (claim.get("status") or {}).get("allocation") or {}
        for result in (allocation.get("devices") or {}).get("results") or []:
            self.add_result(result)

    def add_result(self, result: Mapping[str, Any]) -> None:
        """One device of an allocation: a result without ``shareID`` holds its device alone."""
        key = (result["driver"], result["pool"], result["device"])
        self.allocated.add(key)
        if "shareID" not in result:
            self.exclusive.add(key)
        used = self.consumed.setdefault(key, {})
        for name, amount in (result.get("consumedCapacity") or {}).items():
            used[name] = used.get(name, Decimal(0)) + quantity(amount)
