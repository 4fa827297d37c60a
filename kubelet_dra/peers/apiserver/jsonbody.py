"""Request bodies in JSON, read as Go's decoder reads them.

Go refuses ``NaN`` and ``Infinity`` (they are not JSON), replaces each byte of invalid UTF-8 with
U+FFFD (and a lone escaped surrogate too: ``yamlbody`` mends YAML the same way), keeps the last
of a duplicated key (the typed decoding then warns about it) and keeps a
number's text, so ``1e3`` is not an integer.

Go's JSON decoder refuses documents nested deeper than 10,000 levels and decodes anything
shallower; Python's parser stops near its recursion limit (1,000). The server raises that limit
once (``allow_deep_documents``) and refuses deeper bodies here in Go's words, so a deep body is a
client error or a valid object, never a crash.
"""

from __future__ import annotations

import codecs
import json
import re
import sys
from typing import Any

from kubelet_dra.peers.kubeproto.jsontext import FloatLiteral, SeenTwice, object_from_pairs

MAX_DEPTH = 10_000
"""Go's ``encoding/json`` nesting limit, which kube-apiserver's decoder inherits."""
_RECURSION_FOR_DEEP_DOCUMENTS = 4 * MAX_DEPTH
"""Frames a document of MAX_DEPTH levels needs while it is parsed, copied, validated and encoded."""
_TOKENS = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_ESCAPED_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_GO_REPLACE = "kubelet-dra-go-replace"
codecs.register_error(_GO_REPLACE, lambda err: ("\ufffd" * (err.end - err.start), err.end))


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
    document = json.loads(
        body.decode("utf-8", _GO_REPLACE),
        parse_float=FloatLiteral,
        parse_constant=_not_json,
        object_pairs_hook=object_from_pairs,
    )
    return mend_surrogates(document) if _ESCAPED_SURROGATE.search(body) else document


def _not_json(constant: str) -> Any:
    """Python's parser takes NaN and Infinity; Go's stops at their first letter."""
    raise ValueError(f"invalid character '{constant.lstrip('-')[0]}' looking for beginning of value")


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


def mend_surrogates(value: Any) -> Any:
    """Strings with an escaped surrogate pair joined and a lone surrogate made U+FFFD, as Go's decoders leave them."""
    if isinstance(value, str):
        if not _SURROGATE.search(value):
            return value
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, dict):
        mended = {mend_surrogates(key): mend_surrogates(item) for key, item in value.items()}
        if not isinstance(value, SeenTwice):
            return mended
        seen_twice = SeenTwice(mended)
        seen_twice.duplicates = value.duplicates
        return seen_twice
    if isinstance(value, list):
        return [mend_surrogates(item) for item in value]
    return value
