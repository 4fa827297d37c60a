"""What docs/real-cluster.md says of a shard's memory holds for what ``benchmarks/many_nodes.py`` measured.

A shard is ``run`` and its driver processes on a real control plane; the results file has one at 10 nodes (the
shipped shards are smaller) and one at 1,000 (the most one process runs). The page states no measured figure
itself: it sizes the shipped request and limit, and this test holds that sizing to the results file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "benchmarks" / "results" / "many_nodes.json"
SHARD = ("run", "driver")
RAISED_LIMIT_MIB = 3072
"""The limit docs/real-cluster.md advises for a shard of 1,000 nodes."""
FEW_HUNDRED = range(200, 1000)
MIB = {"Mi": 1, "Gi": 1024}


def page() -> str:
    return " ".join((REPO / "docs" / "real-cluster.md").read_text().split())


def shard_mb(nodes: int, measure: str) -> float:
    """A shard's memory at ``nodes`` on the real control plane: ``rss_mb`` at rest or ``peak_mb``, summed."""
    fleets = json.loads(RESULTS.read_text())["fleets"]
    (fleet,) = [fleet for fleet in fleets if fleet["apiserver"] == "real" and fleet["nodes"] == nodes]
    return sum(fleet["processes"][role][measure] for role in SHARD)


def shipped() -> dict[str, Any]:
    """The shard's container resources in deploy/20-nodes.yaml."""
    documents = yaml.safe_load_all((REPO / "deploy" / "20-nodes.yaml").read_text())
    (statefulset,) = [doc for doc in documents if doc and doc["kind"] == "StatefulSet"]
    (container,) = statefulset["spec"]["template"]["spec"]["containers"]
    return container["resources"]


def mib(quantity: str) -> int:
    return int(quantity[:-2]) * MIB[quantity[-2:]]


def test_the_results_have_every_api_server_at_a_thousand_nodes_and_a_small_real_shard() -> None:
    fleets = json.loads(RESULTS.read_text())["fleets"]
    assert {("real", 10), ("real", 1000), ("embedded", 1000)} <= {(f["apiserver"], f["nodes"]) for f in fleets}


def test_the_page_names_the_shipped_request_and_limit() -> None:
    resources = shipped()
    assert f"request ({mib(resources['requests']['memory'])} MiB)" in page()
    assert f"limit ({mib(resources['limits']['memory']) // 1024} GiB) a few hundred nodes per shard" in page()
    assert f"about {RAISED_LIMIT_MIB / 1024:g} GiB for a shard of 1,000" in page()


def test_the_request_covers_a_small_shard_at_rest() -> None:
    assert shard_mb(10, "rss_mb") <= mib(shipped()["requests"]["memory"])


def test_the_limit_holds_a_few_hundred_nodes_and_the_raised_one_a_thousand() -> None:
    """Between the two sizes a shard's peak grows by the nodes' part: where it reaches the limit, by a straight line."""
    small, large, limit = shard_mb(10, "peak_mb"), shard_mb(1000, "peak_mb"), mib(shipped()["limits"]["memory"])
    assert limit < large <= RAISED_LIMIT_MIB
    assert round(10 + (limit - small) * (1000 - 10) / (large - small)) in FEW_HUNDRED
