"""Go's parsers for the scalar types whose JSON is a string with a grammar: quantities, times, base64.

Each returns None for a valid text, or the error Go returns for it, word for word where clients
see it (kube-apiserver puts it after "<Kind> in version ... cannot be handled as a <Kind>: ").
"""

from __future__ import annotations

import base64
import binascii
import calendar
import re

QUANTITY_FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_QUANTITY = re.compile(r"([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)")
_QUANTITY_SUFFIXES = frozenset({"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei", "n", "u", "m", "k", "M", "G", "T", "P", "E"})
_EXPONENT = re.compile(r"[eE][-+]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)")

RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"
_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def quantity_error(text: str) -> str | None:
    """What Go's ``resource.ParseQuantity`` says about ``text`` (already stripped of its quotes)."""
    text = text.strip()
    match = _QUANTITY.fullmatch(text)
    if not text or match is None:
        return QUANTITY_FORMAT_ERROR
    number, suffix = match.groups()
    if suffix not in _QUANTITY_SUFFIXES and not _EXPONENT.fullmatch(suffix):
        return "unable to parse quantity's suffix"
    if not _NUMBER.fullmatch(number):
        return "unable to parse quantity's numeric part"
    return None


def _layout_elements(layout: str) -> list[str]:
    """A Go RFC 3339 layout as its elements: numbers, literal separators, the fraction and the zone."""
    return re.findall(r"2006|01|02|15|04|05|\.000000|Z07:00|.", layout)


_FIELD_DIGITS = {"2006": 4, "01": 2, "02": 2, "15": 2, "04": 2, "05": 2}
_FIELD_RANGES = {"01": (1, 12, "month"), "15": (0, 23, "hour"), "04": (0, 59, "minute"), "05": (0, 59, "second")}


def time_error(value: str, layout: str) -> str | None:
    """What Go's ``time.Parse(layout, value)`` says for an RFC 3339 layout, or None when it parses."""
    prefix = f'parsing time "{value}" as "{layout}"'
    rest, numbers = value, {}
    for element in _layout_elements(layout):
        if element in _FIELD_DIGITS:
            width = _FIELD_DIGITS[element]
            if len(rest) < width or not rest[:width].isdigit():
                return f'{prefix}: cannot parse "{rest}" as "{element}"'
            numbers[element], rest = int(rest[:width]), rest[width:]
            fraction = len(rest) >= 2 and rest[0] in ".," and rest[1].isdigit()
            if element == "05" and fraction and layout != RFC3339_MICRO:
                rest = rest[1:].lstrip("0123456789")
        elif element == ".000000":
            if len(rest) < len(element) or rest[0] not in ".," or not rest[1 : len(element)].isdigit():
                return f'{prefix}: cannot parse "{rest}" as "{element}"'
            rest = rest[len(element) :]
        elif element == "Z07:00":
            if rest.startswith("Z"):
                rest = rest[1:]
            elif re.match(r"[+-]\d\d:\d\d", rest):
                rest = rest[6:]
            else:
                return f'{prefix}: cannot parse "{rest}" as "{element}"'
        elif rest.startswith(element):
            rest = rest[len(element) :]
        else:
            return f'{prefix}: cannot parse "{rest}" as "{element}"'
    if rest:
        return f'{prefix}: extra text: "{rest}"'
    for element, (low, high, name) in _FIELD_RANGES.items():
        if not low <= numbers[element] <= high:
            return f'parsing time "{value}": {name} out of range'
    days = calendar.monthrange(numbers["2006"] or 2000, numbers["01"])[1]
    if not 1 <= numbers["02"] <= days:
        return f'parsing time "{value}": day out of range'
    return None


def base64_error(text: str) -> str | None:
    """What Go's ``base64.StdEncoding`` says about ``text`` (line breaks are skipped, as Go does)."""
    data = text.replace("\r", "").replace("\n", "")
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        for index, char in enumerate(data):
            if char not in _BASE64 and char != "=":
                return f"illegal base64 data at input byte {index}"
        position = data.find("=")
        return f"illegal base64 data at input byte {position if position >= 0 else len(data)}"
    return None
