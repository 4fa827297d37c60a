"""Go's formatting of quoted strings and gRPC errors, so kubelet error texts can be reproduced byte for byte."""

from __future__ import annotations

from collections.abc import Iterable

import grpc

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


def go_code_name(code: grpc.StatusCode) -> str:
    """A gRPC status code as grpc-go's ``codes.Code.String()`` spells it: ``OK``, ``DeadlineExceeded``, ``Canceled``."""
    if code is grpc.StatusCode.CANCELLED:
        return "Canceled"
    return "OK" if code is grpc.StatusCode.OK else code.name.title().replace("_", "")


def go_rpc_error(err: grpc.aio.AioRpcError) -> str:
    """A gRPC error as grpc-go prints it, which is how it appears in kubelet messages."""
    return go_status_error(err.code(), err.details() or "")


def go_status_error(code: grpc.StatusCode, details: str) -> str:
    """A failed call's status as grpc-go prints the error (``rpc error: code = … desc = …``)."""
    name = go_code_name(code)
    if code is grpc.StatusCode.DEADLINE_EXCEEDED and details == "Deadline Exceeded":
        details = "context deadline exceeded"  # what a Go client reports for its own deadline
    return f"rpc error: code = {name} desc = {details}"
