"""YAML within go-yaml's nesting bound: libyaml's linear check refuses exactly what the composer refuses."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import yaml

from kubelet_dra.peers import goyaml
from kubelet_dra.peers.apiserver.jsonbody import allow_deep_documents


def flow(depth: int, leaf: str = "") -> str:
    return f"x: {'[' * depth}{leaf}{']' * depth}\n"


def block(depth: int) -> str:
    return "".join(f"{'  ' * level}k{level}:\n" for level in range(depth)) + f"{'  ' * depth}v\n"


def mixed(depth: int) -> str:
    half = depth // 2
    return "".join(f"{'  ' * level}k{level}:\n" for level in range(half)) + f"{'  ' * half}{flow(depth - half, '1')}"


BOUND = 40
"""A bound the tests set, so that the bodies around it are read in milliseconds by PyYAML's quadratic scanner."""
BODIES = {
    f"{shape.__name__}-{depth}": shape(depth)
    for shape in (flow, block, mixed)
    for depth in (BOUND - 2, BOUND - 1, BOUND, BOUND + 1)
}
BODIES |= {"flow-leaf": flow(BOUND - 1, "1"), "malformed-deep": flow(BOUND + 5)[:-3] + ": ["}


def outcome(read: Callable[[], object]) -> str:
    try:
        read()
    except (yaml.YAMLError, RecursionError) as err:
        return str(err).splitlines()[0]
    return "ok"


@pytest.mark.parametrize("name", sorted(BODIES))
def test_the_linear_depth_check_refuses_exactly_what_the_composer_refuses(name: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(goyaml, "MAX_DEPTH", BOUND)
    text = BODIES[name]
    checked = outcome(lambda: goyaml.load(text))
    assert checked == outcome(lambda: goyaml._compose_checked(text, all_documents=False))  # the composer alone
    assert checked.startswith(("ok", f"yaml: exceeded max depth of {BOUND}", "while parsing"))
    if checked.startswith("yaml: exceeded max depth"):  # refused by the linear check, before the composer runs
        with pytest.raises(goyaml.GoYAMLError):
            goyaml._check_depth(text)


def test_a_body_deeper_than_libyaml_reads_is_refused_with_go_yamls_words():
    """50,000 levels: libyaml stops at its own bound of 1,000 flow levels, the composer's."""
    allow_deep_documents()
    with pytest.raises(goyaml.GoYAMLError, match=r"^yaml: exceeded max depth of 1000$"):
        goyaml.load(flow(50_000))
