"""Selector expressions as DRA writes them, evaluated over one device."""

from __future__ import annotations

import pytest

from kubelet_dra.peers.controlplane.cel import SelectorError, device_variable, matches

DEVICE = device_variable(
    "gpu.example.com",
    {
        "name": "device-0",
        "attributes": {
            "model": {"string": "A100"},
            "index": {"int": 2},
            "mig": {"bool": True},
            "x.io/zone": {"int": 3},
        },
        "capacity": {"memory": {"value": "16Gi"}},
    },
)


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.driver == "gpu.example.com"', True),
        ('device.attributes["gpu.example.com"].model == "A100"', True),
        ('device.attributes["gpu.example.com"].index > 1 && device.attributes["gpu.example.com"].mig', True),
        ('device.attributes["x.io"].zone == 3', True),
        ('"model" in device.attributes["gpu.example.com"]', True),
        ('"model" in device.attributes["other.io"]', False),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("8Gi")) >= 0', True),
        ('device.capacity["gpu.example.com"].memory.compareTo(quantity("32Gi")) >= 0', False),
        ('device.capacity["gpu.example.com"].memory == quantity("16384Mi")', True),
        ('device.capacity["gpu.example.com"].memory.isLessThan(quantity("1Gi"))', False),
    ],
)
def test_expressions_evaluate_like_kubernetes(expression: str, expected: bool) -> None:
    assert matches(expression, DEVICE) is expected


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ('device.attributes["gpu.example.com"].colour == "red"', "colour"),
        ("device.driver ==", "invalid CEL expression"),
        ("1 + 1", "must yield a bool"),
    ],
)
def test_expressions_that_cannot_decide_raise_a_selector_error(expression: str, problem: str) -> None:
    with pytest.raises(SelectorError, match=problem):
        matches(expression, DEVICE)
