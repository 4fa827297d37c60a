"""What a JSON text says beyond its values, which Go's decoder sees and ``json.loads`` forgets.

A number's literal (Go refuses ``1e3`` or ``2.0`` for an integer field, whose value is whole) and
keys written twice in one object (Go keeps the last and reports a duplicate field). The request
parser builds its documents with these; typed decoding reads them.
"""

from __future__ import annotations

from typing import Any


class FloatLiteral(float):
    """A JSON number written with a fraction or exponent, which keeps its text: Go refuses ``1e3`` for an int."""

    text: str

    def __new__(cls, text: str) -> FloatLiteral:
        number = super().__new__(cls, text)
        number.text = text
        return number


class SeenTwice(dict[str, Any]):
    """A JSON object whose text named some keys more than once (the last value kept, as in Go)."""

    duplicates: frozenset[str] = frozenset()


def object_from_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``' object hook: a dict, or a SeenTwice that remembers its duplicated keys.

    A duplicated key moves to where it was last seen, where Go reports it.
    """
    document = dict(pairs)
    if len(document) == len(pairs):
        return document
    seen_twice = SeenTwice()
    duplicates = set()
    for key, value in pairs:
        if key in seen_twice:
            duplicates.add(key)
            del seen_twice[key]
        seen_twice[key] = value
    seen_twice.duplicates = frozenset(duplicates)
    return seen_twice
