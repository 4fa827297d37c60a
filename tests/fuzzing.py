"""Shared pieces of the fuzz tests: hypothesis's settings and JSON-like values.

The examples are derandomized so that CI runs the same bounded set every time (a failure there is
reproducible as is); ``KDRA_FUZZ_EXAMPLES`` raises the count and ``KDRA_FUZZ_RANDOM=1`` explores
new examples on a developer's machine.
"""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

FUZZ = settings(
    max_examples=int(os.environ.get("KDRA_FUZZ_EXAMPLES", "120")),
    deadline=None,
    database=None,
    derandomize=os.environ.get("KDRA_FUZZ_RANDOM") != "1",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture, HealthCheck.data_too_large],
)

SCALARS = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=20)
JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=25,
)


def shaped_like(document: Any) -> st.SearchStrategy[Any]:
    """``document`` with any of its values replaced by arbitrary JSON: malformed in one place, valid elsewhere."""
    if isinstance(document, dict):
        return st.fixed_dictionaries(
            {key: shaped_like(value) | JSON_VALUES for key, value in document.items()},
            optional={"unexpected": JSON_VALUES},
        )
    if isinstance(document, list):
        return st.lists(st.one_of([shaped_like(item) for item in document] or [JSON_VALUES]), max_size=3)
    return st.just(document) | JSON_VALUES
