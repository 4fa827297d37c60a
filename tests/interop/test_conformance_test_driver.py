"""``kubelet-dra conformance`` against Kubernetes' own DRA test driver, on the embedded and a real API server."""

from __future__ import annotations

from pathlib import Path

import pytest
from realk8s import DRIVER_DEFECTS, client_go_refusals, conformance_verdicts, kubernetes_test_driver_cmd
from test_conformance_example_driver import SERVERS, cluster_args, run_conformance


@pytest.mark.parametrize("server", SERVERS)
async def test_the_kubernetes_test_driver_fails_only_its_proven_defects(
    request: pytest.FixtureRequest, interop_bin: Path, server: str
):
    args = cluster_args(request, server, "test-driver-node")
    code, report, log = await run_conformance(kubernetes_test_driver_cmd(interop_bin), *args)
    counts, unexplained = conformance_verdicts(report, "dra-test-driver")
    assert not unexplained, f"{counts}: " + "\n".join(unexplained)
    failed = {check["id"] for check in report["checks"] if check["result"] == "failed"}
    assert failed == {check for driver, check in DRIVER_DEFECTS if driver == "dra-test-driver"}
    assert code == 1 and counts["passed"] >= 55, counts
    assert not client_go_refusals(log), client_go_refusals(log)[:5]
    pre_006 = next(check for check in report["checks"] if check["id"] == "PRE-006")
    assert pre_006["result"] == "skipped" and "does not check allocations" in pre_006["reason"]
