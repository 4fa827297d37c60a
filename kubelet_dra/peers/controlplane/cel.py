"""DRA device selectors evaluated as CEL (cel-python).

The variable ``device`` carries ``driver``, ``allowMultipleAllocations``, ``attributes`` and
``capacity``; both maps are keyed by domain, and a short attribute name is qualified by the
driver name, as in Kubernetes. A domain a device has nothing under reads as an empty map, so
``device.attributes["x"].y`` fails on ``y``, not on the domain. Capacities are quantities
comparable with ``quantity("8Gi")``.
"""

from __future__ import annotations

import functools
from decimal import Decimal
from typing import Any

import attrs
import celpy
from celpy import celtypes

from kubelet_dra.peers.quantity import parse_quantity


class SelectorError(ValueError):
    """An expression does not compile (or nests deeper than Python evaluates), fails at run time or does not yield a
    bool: its claim cannot be allocated, and the other claims still are."""


@attrs.frozen
class Quantity:
    """A resource quantity as CEL sees it: equal by value, ordered only through ``compareTo`` and friends."""

    value: Decimal


class _Domains(celtypes.MapType):
    """A map of domains in which every domain exists (empty when the device has nothing there)."""

    def __getitem__(self, key: Any) -> Any:
        return super().get(key, celtypes.MapType())


def _quantity(text: Any) -> Quantity:
    return Quantity(parse_quantity(text))


def _compare(left: Quantity, right: Quantity) -> celtypes.IntType:
    return celtypes.IntType((left.value > right.value) - (left.value < right.value))


_FUNCTIONS = {
    "quantity": _quantity,
    "compareTo": _compare,
    "isGreaterThan": lambda left, right: celtypes.BoolType(left.value > right.value),
    "isLessThan": lambda left, right: celtypes.BoolType(left.value < right.value),
    "asInteger": lambda value: celtypes.IntType(int(value.value)),
}


@functools.lru_cache(maxsize=512)
def _program(expression: str) -> celpy.Runner:
    environment = celpy.Environment()
    try:
        return environment.program(environment.compile(expression), functions=_FUNCTIONS)
    except celpy.CELParseError as err:
        raise SelectorError(f"invalid CEL expression {expression!r}: {err}") from err
    except RecursionError:
        raise SelectorError(f"invalid CEL expression {expression[:40]!r}...: nested too deep") from None


def _qualified(name: str, driver: str) -> tuple[str, str]:
    domain, _, short = name.rpartition("/")
    return (domain or driver, short)


def _attribute_value(value: dict[str, Any]) -> Any:
    if "bool" in value:
        return celtypes.BoolType(bool(value["bool"]))
    if "int" in value:
        return celtypes.IntType(int(value["int"]))
    return celtypes.StringType(str(value.get("string", value.get("version", ""))))


def device_variable(driver: str, device: dict[str, Any]) -> celtypes.MapType:
    """The ``device`` variable for one ResourceSlice device entry of ``driver``."""
    attributes: dict[str, dict[Any, Any]] = {}
    for name, value in (device.get("attributes") or {}).items():
        domain, short = _qualified(name, driver)
        attributes.setdefault(domain, {})[celtypes.StringType(short)] = _attribute_value(value)
    capacity: dict[str, dict[Any, Any]] = {}
    for name, value in (device.get("capacity") or {}).items():
        domain, short = _qualified(name, driver)
        capacity.setdefault(domain, {})[celtypes.StringType(short)] = _quantity(value.get("value", "0"))
    return celtypes.MapType(
        {
            celtypes.StringType("driver"): celtypes.StringType(driver),
            celtypes.StringType("allowMultipleAllocations"): celtypes.BoolType(
                bool(device.get("allowMultipleAllocations"))
            ),
            celtypes.StringType("attributes"): _Domains(
                {celtypes.StringType(k): celtypes.MapType(v) for k, v in attributes.items()}
            ),
            celtypes.StringType("capacity"): _Domains(
                {celtypes.StringType(k): celtypes.MapType(v) for k, v in capacity.items()}
            ),
        }
    )


def matches(expression: str, device: celtypes.MapType) -> bool:
    """Whether ``device`` satisfies ``expression``; ``SelectorError`` when it cannot be decided."""
    try:
        result = _program(expression).evaluate({"device": device})
    except celpy.CELEvalError as err:
        reason = str(err.args[0]).split(" (in activation")[0]  # the evaluator appends every variable it had
        raise SelectorError(f"CEL expression {expression!r} failed: {reason}") from err
    except RecursionError:
        raise SelectorError(f"CEL expression {expression[:40]!r}... failed: nested too deep") from None
    if not isinstance(result, celtypes.BoolType):
        raise SelectorError(f"CEL expression {expression!r} must yield a bool, not {type(result).__name__}")
    return bool(result)
