"""Go's quoting of strings (``%q``), shared by the kubelet's error texts and the API server's headers."""

from __future__ import annotations

from collections.abc import Iterable

_ESCAPES = {"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t", "\v": r"\v"}


def go_quote(text: str) -> str:
    """``fmt.Sprintf("%q", text)``: double-quoted, with Go's escapes for quotes and unprintable runes."""
    return '"' + "".join(_quote_rune(char) for char in text) + '"'


def go_quote_list(items: Iterable[str]) -> str:
    """``fmt.Sprintf("%q", items)`` for a ``[]string``: ``["a" "b"]``."""
    return "[" + " ".join(go_quote(item) for item in items) + "]"


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
