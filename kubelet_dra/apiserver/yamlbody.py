"""Request bodies in YAML, with strings as Go's decoders leave them.

YAML decodes ``\\u`` escapes one UTF-16 unit at a time, so a character beyond the Basic
Multilingual Plane written as an escaped surrogate pair, as JSON encoders write it
(``"\\ud800\\udc00"``), arrives as two lone surrogates, which no UTF-8 answer can carry. Go joins
such a pair into its character and turns a lone surrogate into U+FFFD; so does this, so a body
that kube-apiserver accepts is stored and answered, never a crash.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_SURROGATE = re.compile("[\ud800-\udfff]")


def loads(body: bytes | str) -> Any:
    """``yaml.safe_load`` with surrogates mended; ``yaml.YAMLError`` for a malformed body."""
    return _mend(yaml.safe_load(body))


def _mend(value: Any) -> Any:
    if isinstance(value, str):
        if not _SURROGATE.search(value):
            return value
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    if isinstance(value, dict):
        return {_mend(key): _mend(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_mend(item) for item in value]
    return value
