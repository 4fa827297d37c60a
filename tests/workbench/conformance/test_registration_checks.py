"""The REG, VER and SLC checks tell a driver's author what is wrong, in words that point at the fix.

Each case breaks the reference driver one way and runs only the checks concerned; the whole
suite's pass/fail pattern per knob is the bite tests' business.
"""

from __future__ import annotations

import pytest

from kubelet_dra.workbench.conformance.options import SuiteOptions
from kubelet_dra.workbench.conformance.suiterunner import run_suite
from kubelet_dra.workbench.conformance.target import Selection, Target

from .reference import NO_SLICES_WITHIN, REGISTERS_WITHIN, with_fault

FAST = SuiteOptions(check_timeout=10, republish_within=2)


@pytest.mark.parametrize(
    ("knob", "value", "expected"),
    [
        ("getinfo-error", "no GPUs", {"REG-002": "failed to get plugin info using RPC GetInfo", "REG-003": "no GPUs"}),
        ("getinfo-delay", "1.5", {"REG-003": "the kubelet gives up after 1 s"}),
        ("getinfo-type", "CSIPlugin", {"REG-004": "GetInfo type is 'CSIPlugin'"}),
        ("versions", "none", {"REG-006": "empty list of supported gRPC services"}),
        ("versions", "1.0.0", {"REG-006": 'none of services supported by the plugin (["1.0.0"])'}),
        ("getinfo-endpoint", "relative.sock", {"REG-007": "'relative.sock' is not an absolute path"}),
        ("notify-error", "nope", {"REG-008": "NotifyRegistrationStatus(true) failed: UNKNOWN: nope"}),
        (
            "serve-advertised-name",
            "true",
            {
                "VER-001": "register the service as k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin",
                "VER-003": "the driver serves /v1.DRAPlugin/NodePrepareResources",
                "VER-005": "answered UNIMPLEMENTED",
            },
        ),
        (
            "slices-node",
            "node-9",
            {"SLC-001": "published no ResourceSlice with spec.nodeName=node-1", "SLC-005": "(nodeName node-9)"},
        ),
        ("no-republish", "true", {"SLC-006": "never republished: no slice listing the wiped devices in 4 s"}),
    ],
)
async def test_a_broken_driver_fails_the_check_with_the_reason(knob: str, value: str, expected: dict[str, str]):
    timeout = NO_SLICES_WITHIN if knob == "slices-node" else REGISTERS_WITHIN
    target = Target(driver_cmd=with_fault(knob, value), registration_timeout=timeout)
    suite = await run_suite(target, FAST, Selection(focus="^(" + "|".join(expected) + ")$"))
    reasons = {result.id: result.reason for result in suite.results if result.result in ("failed", "warning")}
    assert reasons.keys() == expected.keys()
    for check_id, words in expected.items():
        assert words in reasons[check_id]


async def test_a_v1beta1_only_driver_with_health_passes_the_version_checks():
    command = with_fault("versions", "v1beta1") + " --health"
    target = Target(driver_cmd=command, registration_timeout=REGISTERS_WITHIN)
    suite = await run_suite(target, FAST, Selection(focus="^(VER|REG-006)"))
    assert suite.ids("failed") == [], {r.id: r.reason for r in suite.results if r.result == "failed"}
    assert suite.ids("skipped") == [], "VER-008 runs: the health service is advertised"
    assert suite.capabilities.chosen_service == "v1beta1.DRAPlugin"


async def test_a_relative_endpoint_fails_the_checks_after_it_at_once_naming_the_endpoint():
    target = Target(driver_cmd=with_fault("getinfo-endpoint", "relative.sock"), registration_timeout=REGISTERS_WITHIN)
    suite = await run_suite(target, FAST, Selection(focus="^(REG-007|PRE-001)$"))
    reasons = {result.id: result.reason for result in suite.results}
    assert suite.ids("failed") == ["REG-007"] and suite.ids("warning") == ["PRE-001"], reasons
    assert "service endpoint 'relative.sock', not an absolute path" in reasons["PRE-001"], reasons
