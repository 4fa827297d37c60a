"""Go's text for strings (``%q``) and durations, shared by the kubelet's error texts and the API server."""

from __future__ import annotations

from collections.abc import Iterable

_ESCAPES = {"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t", "\v": r"\v"}


def go_quote(text: str) -> str:
    """``fmt.Sprintf("%q", text)``: double-quoted, with Go's escapes for quotes and unprintable runes."""
    return '"' + "".join(_quote_rune(char) for char in text) + '"'


def go_quote_list(items: Iterable[str]) -> str:
    """``fmt.Sprintf("%q", items)`` for a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(go_quote(item) for item in items) + "]"


_SMALL_UNITS = (("ms", 1_000_000), ("µs", 1_000), ("ns", 1))


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


def _quote_rune(char: str) -> str:
    if char in '"\\':
        return "\\" + char
    if char.isprintable():  # same classes as Go's unicode.IsPrint: letters, marks, numbers, punct., symbols, " "
        return char
    if char in _ESCAPES:
        return _ESCAPES[char]
    code = ord(char)
    if code < 0x80:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
