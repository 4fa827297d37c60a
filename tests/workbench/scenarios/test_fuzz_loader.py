"""Fuzzed scenario files: the loader answers every file with a scenario or with ``ScenarioError``
naming file, line, column and field, never with another exception."""

from __future__ import annotations

from pathlib import Path

import yaml
from fuzzing import FUZZ, shaped_like
from hypothesis import given
from hypothesis import strategies as st

from kubelet_dra.workbench.scenarios.loader import ScenarioError, loads

SCENARIOS = Path(__file__).resolve().parents[3] / "scenarios"
SHAPES = [yaml.safe_load(path.read_text()) for path in sorted(SCENARIOS.glob("*.yaml"))[:6]]


def load_or_explain(text: str) -> None:
    try:
        loads(text, "fuzz.yaml")
    except ScenarioError as err:
        assert err.issues, "a ScenarioError lists at least one problem"
        for issue in err.issues:
            assert str(issue).startswith("fuzz.yaml:"), issue
            assert "Traceback" not in str(issue)


@FUZZ
@given(document=st.one_of([shaped_like(shape) for shape in SHAPES]))
def test_scenarios_of_any_shape_load_or_say_what_is_wrong(document: object):
    load_or_explain(yaml.safe_dump(document, sort_keys=False))


@FUZZ
@given(text=st.text(max_size=400))
def test_any_text_loads_or_says_what_is_wrong(text: str):
    load_or_explain(text)
