"""Request bodies in JSON, read with kube-apiserver's nesting limit.

Go's JSON decoder refuses documents nested deeper than 10,000 levels and decodes anything
shallower; Python's parser stops near its recursion limit (1,000). The server raises that limit
once (``allow_deep_documents``) and refuses deeper bodies here in Go's words, so a deep body is a
client error or a valid object, never a crash.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

MAX_DEPTH = 10_000
"""Go's ``encoding/json`` nesting limit, which kube-apiserver's decoder inherits."""
_RECURSION_FOR_DEEP_DOCUMENTS = 4 * MAX_DEPTH
"""Frames a document of MAX_DEPTH levels needs while it is parsed, copied, validated and encoded."""
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def allow_deep_documents() -> None:
    """Let documents as deep as Go accepts be parsed and processed (the recursion limit is per process)."""
    sys.setrecursionlimit(max(sys.getrecursionlimit(), _RECURSION_FOR_DEEP_DOCUMENTS))


def loads(body: bytes) -> Any:
    """``json.loads`` that refuses, with ValueError in Go's words, what Go's decoder refuses as too deep."""
    if body.count(b"[") + body.count(b"{") > MAX_DEPTH:
        bracket = _first_too_deep(body)
        if bracket is not None:
            snippet = body[:30].decode(errors="replace")
            raise ValueError(f"invalid character '{bracket}' exceeded max depth ({snippet} ...)")
    return json.loads(body)


def _first_too_deep(body: bytes) -> str | None:
    """The bracket that opens level MAX_DEPTH + 1 (strings skipped), or None when the body is shallower."""
    depth = 0
    for token in _TOKENS.finditer(body):
        text = token.group()
        if text in (b"[", b"{"):
            depth += 1
            if depth > MAX_DEPTH:
                return text.decode()
        elif text in (b"]", b"}"):
            depth -= 1
    return None
