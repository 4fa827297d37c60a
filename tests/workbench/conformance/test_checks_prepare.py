"""The PRE/UNP/CDI/LIF checks against a one-device driver (a node with one GPU is a fair target): checks that
need more devices skip and say so, every other check passes."""

from __future__ import annotations

from kubelet_dra.workbench.conformance.options import SuiteOptions
from kubelet_dra.workbench.conformance.suiterunner import run_suite
from kubelet_dra.workbench.conformance.target import Selection, Target
from kubelet_dra.workbench.junit import FAILED, SKIPPED

from .reference import REFERENCE


async def test_checks_needing_more_devices_skip_on_a_one_device_node() -> None:
    suite = await run_suite(
        Target(driver_cmd=f"{REFERENCE} --devices 1"), SuiteOptions(), Selection(focus=r"^(PRE|UNP|CDI|LIF)-")
    )
    assert suite.ids(FAILED) == [], {r.id: r.reason for r in suite.results if r.result == FAILED}
    skipped = {r.id: r.reason for r in suite.results if r.result == SKIPPED}
    assert set(skipped) == {"CDI-002", "CDI-005", "LIF-001", "LIF-002", "PRE-003", "PRE-004", "PRE-008", "UNP-005"}
    assert all(reason.startswith("needs ") and reason.endswith("its slices list 1") for reason in skipped.values())


async def test_devices_that_allow_multiple_allocations_may_serve_concurrent_claims(tmp_path) -> None:
    """Like the example driver's cpu and net profiles: one shared device serves every claim, which PRE-008 allows."""
    config = tmp_path / "shared.yaml"
    config.write_text("driverName: gpu.example.com\ndevices: 3\nsharing: shared\n")
    suite = await run_suite(
        Target(driver_cmd=f"{REFERENCE} --config {config}"), SuiteOptions(), Selection(focus=r"^(CLM-001|PRE-008)$")
    )
    result = suite.by_id()["PRE-008"]
    assert result.result != FAILED, result.reason
    prepared = [call for call in result.calls if call.method.endswith("NodePrepareResources")]
    devices = [d["device_name"] for call in prepared for c in call.response["claims"].values() for d in c["devices"]]
    assert len(devices) == 3 and len(set(devices)) < 3, devices
