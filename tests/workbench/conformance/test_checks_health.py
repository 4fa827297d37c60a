"""The HEA checks: no fault knob breaks the health stream, so these tests break it through the reference
driver's control socket, and show the checks skip (with the reason) for drivers without the service."""

from __future__ import annotations

import re

import pytest

from kubelet_dra.peers.api.services import DRA_HEALTH_V1
from kubelet_dra.workbench.conformance.checkcontext import Capabilities, CheckContext
from kubelet_dra.workbench.conformance.checks import all_checks
from kubelet_dra.workbench.conformance.framework import CHECKS, HEALTH
from kubelet_dra.workbench.conformance.options import SuiteOptions
from kubelet_dra.workbench.conformance.outcomes import CheckFailed
from kubelet_dra.workbench.conformance.suiterunner import run_suite
from kubelet_dra.workbench.conformance.target import Selection, Target
from kubelet_dra.workbench.junit import SKIPPED
from kubelet_dra.workbench.testbed import DriverSpec, Testbed, manifests, objects

from .reference import GPU, REFERENCE


async def test_health_checks_skip_with_the_reason_when_the_driver_has_no_health_service() -> None:
    suite = await run_suite(Target(driver_cmd=REFERENCE), selection=Selection(focus=r"^HEA-"))
    assert [r.id for r in suite.results] == [c.id for c in all_checks() if c.id.startswith("HEA-")]
    assert {(r.result, r.reason) for r in suite.results} == {(SKIPPED, HEALTH.unmet)}


def reached(bed: Testbed, health: dict[str, str]) -> bool:
    """The node's own stream delivered the health the driver was just told to report."""
    assert bed.node.health is not None
    now = {device.device_name: str(device.health) for device in bed.node.health.devices(GPU)}
    return all(now.get(device) == state for device, state in health.items())


@pytest.mark.parametrize(
    ("check_id", "health", "message", "expected"),
    [
        ("HEA-003", {"device-1": "Unhealthy"}, "x" * 2000, "a message of 2000 bytes"),
        ("HEA-005", {"device-2": "Unknown"}, "", "shows Unknown: ['node-1/device-2']"),
    ],
)
async def test_a_bad_health_report_fails_its_check(
    check_id: str, health: dict[str, str], message: str, expected: str
) -> None:
    async with Testbed() as bed:
        driver = await bed.add_driver(DriverSpec(GPU, extra_args=("--devices", "4", "--health")))
        await objects.apply(bed.kube, manifests.device_class(GPU))
        capabilities = Capabilities(GPU, "", (), "", (DRA_HEALTH_V1,), True, True, True)
        ctx = CheckContext(bed, driver, capabilities, SuiteOptions(), GPU)
        await bed.until(ctx.slices, timeout=10, what="slices")
        await CHECKS[check_id].run(ctx)  # a healthy driver passes
        await driver.set_health(health, message)
        await bed.until(lambda: reached(bed, health), timeout=5, what="the new health at the node")
        with pytest.raises(CheckFailed, match=re.escape(expected)):
            await CHECKS[check_id].run(ctx)
        await ctx.cleanup()


async def test_a_health_repeat_slower_than_the_check_timeout_but_within_the_devices_timeout_passes() -> None:
    """HEA-004 waits for the second message as long as the devices' health timeout says, past --check-timeout."""
    command = f"{REFERENCE} --health --health-interval 2.5"
    suite = await run_suite(Target(driver_cmd=command), SuiteOptions(check_timeout=1.5), Selection(focus="^HEA-004$"))
    (result,) = suite.results
    assert result.result == "passed", result.reason
    assert result.seconds > 1.5
