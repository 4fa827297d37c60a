"""Go's ``time.Duration`` text: how a ``meta.v1.Duration`` is written in JSON and read back."""

from __future__ import annotations

import re
from typing import Any

from kubelet_dra.kubeproto.schema import ProtobufError, json_type

_DURATION_UNITS = (("h", 3_600_000_000_000), ("m", 60_000_000_000), ("s", 1_000_000_000))
_SMALL_UNITS = (("ms", 1_000_000), ("µs", 1_000), ("ns", 1))
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_NANOS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_UNIT_NANOS |= {"m": 60_000_000_000, "h": 3_600_000_000_000}


def go_duration(nanos: int) -> str:
    """A duration as Go's ``time.Duration.String`` writes it (``1h2m3.5s``, ``150ms``, ``0s``)."""
    if nanos == 0:
        return "0s"
    sign, nanos = ("-", -nanos) if nanos < 0 else ("", nanos)
    if nanos < 1_000_000_000:
        for unit, size in _SMALL_UNITS:
            if nanos >= size:
                return sign + _decimal(nanos, size) + unit
    hours, rest = divmod(nanos, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    text = f"{hours}h" if hours else ""
    text += f"{minutes}m" if hours or minutes else ""
    return sign + text + _decimal(rest, 1_000_000_000) + "s"


def _decimal(value: int, unit: int) -> str:
    whole, fraction = divmod(value, unit)
    if not fraction:
        return str(whole)
    digits = str(fraction).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


def parse_go_duration(value: Any, path: str = "duration") -> int:
    """Nanoseconds of a Go duration string (``1h30m``, ``-1.5s``, ``0``)."""
    if not isinstance(value, str) or not value:
        raise ProtobufError(f"{path}: a duration must be a string such as '30s', got {json_type(value)}")
    sign = -1 if value.startswith("-") else 1
    text = value[1:] if value[0] in "+-" else value
    if text == "0":
        return 0
    total, position = 0, 0
    for match in _DURATION_PART.finditer(text):
        if match.start() != position:
            break
        total += round(float(match[1]) * _UNIT_NANOS[match[2]])
        position = match.end()
    if position != len(text) or position == 0:
        raise ProtobufError(f"{path}: {value!r} is not a duration (examples: 30s, 1m30s, 250ms)")
    return sign * total
