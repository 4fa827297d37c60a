"""Request bodies in YAML, with strings as Go's decoders leave them.

YAML decodes ``\\u`` escapes one UTF-16 unit at a time, so a character beyond the Basic
Multilingual Plane written as an escaped surrogate pair, as JSON encoders write it
(``"\\ud800\\udc00"``), arrives as two lone surrogates, which no UTF-8 answer can carry. Go joins
such a pair into its character and turns a lone surrogate into U+FFFD; so does this, so a body
that kube-apiserver accepts is stored and answered, never a crash. Aliases, nesting and anchors
that hold themselves are bounded as go-yaml bounds them (``peers.goyaml``): such a body is a 400.
"""

from __future__ import annotations

from typing import Any

from kubelet_dra.peers import goyaml
from kubelet_dra.peers.apiserver.jsonbody import mend_surrogates


def loads(body: bytes | str) -> Any:
    """``yaml.safe_load`` within go-yaml's bounds, surrogates mended; ``yaml.YAMLError`` for a malformed body."""
    return mend_surrogates(goyaml.load(body))
