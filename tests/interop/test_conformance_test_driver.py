"""``kubelet-dra conformance`` against Kubernetes' own DRA test driver, on the embedded and a real API server."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import kubelet_dra
from realk8s import DRIVER_DEFECTS, TEST_DRIVER, client_go_refusals, conformance_verdicts, kubernetes_test_driver_cmd
from test_conformance_example_driver import SERVERS, cluster_args, run_conformance

DEFECTS = {check for driver, check in DRIVER_DEFECTS if driver == "dra-test-driver"}


@pytest.mark.parametrize("server", SERVERS)
async def test_the_kubernetes_test_driver_passes_with_warnings_for_its_proven_defects(
    request: pytest.FixtureRequest, interop_bin: Path, server: str
):
    """Its proven defects are should-findings: warnings, exit 0; every must-check passes or skips."""
    args = cluster_args(request, server, "test-driver-node")
    command = kubernetes_test_driver_cmd(interop_bin)
    code, report, log = await run_conformance(command, "--driver-name", TEST_DRIVER, *args)
    counts, unexplained = conformance_verdicts(report, "dra-test-driver")
    assert not unexplained, f"{counts}: " + "\n".join(unexplained)
    warned = {check["id"] for check in report["checks"] if check["result"] == "warning"}
    assert warned == DEFECTS and counts["failed"] == 0, counts
    assert code == 0 and counts["passed"] >= 55, counts
    assert not client_go_refusals(log), client_go_refusals(log)[:5]
    pre_006 = next(check for check in report["checks"] if check["id"] == "PRE-006")
    assert pre_006["result"] == "skipped" and "does not check allocations" in pre_006["reason"]


async def test_strict_fails_the_test_driver_naming_its_should_findings(interop_bin: Path):
    """--strict turns the should-findings into failures: exit 1, and the text report names each one."""
    command = kubernetes_test_driver_cmd(interop_bin)
    code, out, err = await kubelet_dra(
        "conformance",
        "--driver-cmd",
        command,
        "--driver-name",
        TEST_DRIVER,
        "--strict",
        "--tags",
        "health",
        timeout=600,
    )
    assert code == 1, (out, err)
    for check in DEFECTS:
        assert f"{check} [should]" in out, out
    assert "Traceback" not in err


async def test_a_driver_that_exits_at_start_stops_the_run_with_its_reason(interop_bin: Path):
    """Without --driver-name the suite cannot make the test driver's dir, and the driver exits at once."""
    code, out, err = await kubelet_dra("conformance", "--driver-cmd", kubernetes_test_driver_cmd(interop_bin))
    assert code == 1 and not out
    assert err.count("the driver exited with code 1 as it started; no check was run") == 1
    assert "bind: no such file or directory" in err, err
    assert "Traceback" not in err
