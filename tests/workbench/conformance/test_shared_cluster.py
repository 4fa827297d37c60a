"""The suite on a cluster it shares with other nodes: their slices are theirs, even of the same driver."""

from __future__ import annotations

from typing import Any

import pytest

from kubelet_dra.workbench.conformance.suiterunner import run_suite
from kubelet_dra.workbench.conformance.target import Selection
from kubelet_dra.workbench.testbed import Testbed, objects

from .reference import GPU, already_running

OTHER = "node-2"


def other_nodes_slice(owner: dict[str, Any]) -> dict[str, Any]:
    """A slice of the same driver for node-2, owned by ``owner`` as the kubelet plugin helper sets it."""
    reference = {"apiVersion": "v1", "kind": "Node", "controller": True}
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {
            "name": f"{OTHER}-{GPU}",
            "ownerReferences": [{**reference, "name": owner["metadata"]["name"], "uid": owner["metadata"]["uid"]}],
        },
        "spec": {
            "driver": GPU,
            "nodeName": OTHER,
            "pool": {"name": OTHER, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "gpu-0"}],
        },
    }


@pytest.mark.parametrize(
    ("written_by", "passes"),
    [(OTHER, True), ("node-1", False)],
    ids=["the other node's instance wrote it", "this node's instance wrote it"],
)
async def test_slc005_counts_only_the_slices_this_nodes_driver_wrote(written_by: str, passes: bool):
    async def another_node(outer: Testbed) -> None:
        await objects.apply(outer.kube, {"apiVersion": "v1", "kind": "Node", "metadata": {"name": OTHER}})
        owner = await objects.get(outer.kube, "Node", written_by)
        assert owner is not None
        await objects.apply(outer.kube, other_nodes_slice(owner))

    async with already_running(another_node) as target:
        suite = await run_suite(target, selection=Selection(focus="^SLC-00[15]$"))
    result = suite.by_id()["SLC-005"]
    assert suite.by_id()["SLC-001"].result == "passed", suite.by_id()["SLC-001"].reason
    if passes:
        assert result.result == "passed", result.reason
    else:
        assert result.result == "failed" and f"(nodeName {OTHER})" in result.reason, result.reason
