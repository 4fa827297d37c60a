"""JSON documents as plain Python values: a fast deep copy, and equality as JSON means it."""

from __future__ import annotations

from typing import Any

MISSING: Any = object()
"""What a lookup in a document finds where there is nothing (``None`` is JSON's null)."""


def clone(value: Any) -> Any:
    """A deep copy of a JSON document (several times faster than ``copy.deepcopy``)."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value


def same(a: Any, b: Any) -> bool:
    """JSON equality: unlike Python's ``==``, ``true`` is not ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(v, b[k]) for k, v in a.items())
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b
