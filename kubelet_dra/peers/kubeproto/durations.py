"""Go's ``time.Duration`` text: how a ``meta.v1.Duration`` is read back from JSON (``gotext`` writes it)."""

from __future__ import annotations

import re
from typing import Any

from kubelet_dra.peers.kubeproto.schema import ProtobufError, json_type

_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_NANOS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_UNIT_NANOS |= {"m": 60_000_000_000, "h": 3_600_000_000_000}


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
