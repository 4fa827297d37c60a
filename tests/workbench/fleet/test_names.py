"""Node name patterns expand as a shell expands them, and a bad one says what is wrong."""

from __future__ import annotations

import pytest

from kubelet_dra.peers.errors import UsageError
from kubelet_dra.workbench.fleet import expand


@pytest.mark.parametrize(
    ("pattern", "names"),
    [
        ("sim-{0..3}", ["sim-0", "sim-1", "sim-2", "sim-3"]),
        ("sim-{8..11}", ["sim-8", "sim-9", "sim-10", "sim-11"]),
        ("sim-{00..02}", ["sim-00", "sim-01", "sim-02"]),
        ("n{3..1}", ["n3", "n2", "n1"]),
        ("gpu-{a,b}-{1..2}", ["gpu-a-1", "gpu-a-2", "gpu-b-1", "gpu-b-2"]),
        ("n1,n2,x-{1..2}", ["n1", "n2", "x-1", "x-2"]),
        ("{a,b{1..2}}", ["a", "b1", "b2"]),
        ("single", ["single"]),
    ],
)
def test_patterns_expand_like_a_shell(pattern: str, names: list[str]) -> None:
    assert expand(pattern) == names


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("sim-{0..", "unbalanced '{'"),
        ("sim-0..1}", "unbalanced '}'"),
        ("sim-{x}", "{x} is neither a range nor a list"),
        ("n1,,n2", "'' cannot be a node name"),
        ("a/b", "'a/b' cannot be a node name"),
        ("n{1..2},n2", "node n2 is named twice"),
        ("n{0..5000}", "more than 1000"),
    ],
)
def test_bad_patterns_name_the_mistake(pattern: str, message: str) -> None:
    with pytest.raises(UsageError) as caught:
        expand(pattern)
    assert message in str(caught.value)
    assert caught.value.where == "--nodes"


@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_shards_name_every_node_once_in_slices_of_even_size(count: int) -> None:
    shards = [expand("sim-{0..9}", f"{index}/{count}") for index in range(count)]
    assert [name for shard in shards for name in shard] == expand("sim-{0..9}")
    assert max(map(len, shards)) - min(map(len, shards)) <= 1


def test_a_shard_of_a_pattern_too_big_for_one_process_is_run() -> None:
    assert expand("sim-{0..1999}", "1/2")[:2] == ["sim-1000", "sim-1001"]
    with pytest.raises(UsageError, match="2000 nodes for one process, more than 1000") as caught:
        expand("sim-{0..1999}")
    assert "--shard INDEX/COUNT" in caught.value.fix


@pytest.mark.parametrize(
    ("shard", "message"),
    [
        ("1", "'1' is not INDEX/COUNT"),
        ("-1/2", "'-1/2' is not INDEX/COUNT"),
        ("2/2", "shard 2 of 2 does not exist"),
        ("0/0", "shard 0 of 0 does not exist"),
        ("0/4", "4 shards of 3 nodes leave some shards without a node"),
    ],
)
def test_bad_shards_name_the_mistake(shard: str, message: str) -> None:
    with pytest.raises(UsageError, match=message) as caught:
        expand("n{1..3}", shard)
    assert caught.value.where == "--shard"
