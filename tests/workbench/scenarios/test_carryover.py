"""A library file written for the reference driver, carried over to a driver under test of another name.

The replays themselves run in ``test_any_driver.py`` (a driver never seen) and the interop tier (real
drivers); here, what the carried file asks of the node, and what a file that needs more is skipped for.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from kubelet_dra.workbench.scenarios.carryover import carry_all, carry_over
from kubelet_dra.workbench.scenarios.loader import load
from kubelet_dra.workbench.scenarios.undertest import REAL_DRIVER_WAIT, DriverFacts, UnderTest
from kubelet_dra.workbench.testbed import claimshapes

from .library import LIBRARY

ACME = DriverFacts(
    name="gpu.acme.dev",
    node="node-1",
    devices=(("node-1", "gpu-0"), ("node-1", "gpu-1"), ("node-1", "gpu-2")),
    shareable=(),
    slices=2,
    health="none",
)
DRIVER = UnderTest("gpu", "./acme-driver --node {node}")


def _conditions(scenario, kind):
    return [condition for step in scenario.steps for condition in step.conditions if condition.kind == kind]


def test_the_file_s_names_become_the_driver_s_and_cdi_ids_must_resolve():
    carried = carry_over(load(LIBRARY / "pod-lifecycle.yaml"), DRIVER, ACME)
    assert not carried.skip
    driver = carried.scenario.driver("gpu")
    assert (driver.name, driver.command, driver.reference) == ("gpu.acme.dev", DRIVER.command, None)
    device_class = next(o for o in carried.scenario.objects if o["kind"] == "DeviceClass")
    assert "device.driver == 'gpu.acme.dev'" in str(device_class) and "example" not in str(device_class)
    (cdi,) = _conditions(carried.scenario, "cdi")
    assert cdi.args == {"pod": "p1", "container": "main", "resolve": True}
    assert [c.args["count"] for c in _conditions(carried.scenario, "slices")] == [2], "the driver's own slice count"
    (running,) = [c for c in _conditions(carried.scenario, "pod") if c.args.get("phase") == "Running"]
    assert running.stretch == REAL_DRIVER_WAIT, "a prepare may take a real driver longer than the file's 3 s"
    quick = carry_over(load(LIBRARY / "pod-lifecycle.yaml"), attrs.evolve(DRIVER, wait=5.0), ACME).scenario
    assert [c.stretch for c in _conditions(quick, "pod") if c.args.get("phase") == "Running"] == [5.0], "--driver-wait"
    wipes = load(LIBRARY / "slices-wiped-after-plugin-stops.yaml")
    absent = [
        c for c in _conditions(carry_over(wipes, DRIVER, ACME).scenario, "slices") if c.args.get("present") is False
    ]
    assert absent and all(c.stretch == 0 for c in absent), "the kubelet's wipe keeps the file's deadline"


def test_claims_allocated_by_hand_use_the_driver_s_own_devices():
    scenario = load(LIBRARY / "unprepare-names-from-cache-1-36.yaml")
    carried = carry_over(scenario, DRIVER, ACME)
    results = [
        result
        for manifest in carried.scenario.objects
        for result in ((manifest.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", [])
    ]
    assert results and all(
        (r["driver"], r["pool"], r["device"]) == ("gpu.acme.dev", "node-1", "gpu-0") for r in results
    )


def test_a_device_class_and_a_claim_given_replace_the_file_s(tmp_path: Path):
    (tmp_path / "class.yaml").write_text(
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: acme-all}\n"
        "spec: {selectors: [{cel: {expression: \"device.driver == 'gpu.acme.dev'\"}}]}\n"
    )
    (tmp_path / "claim.yaml").write_text("devices: {requests: [{name: all, exactly: {allocationMode: All}}]}\n")
    under_test = UnderTest(
        "gpu",
        DRIVER.command,
        device_class=claimshapes.device_class_file(tmp_path / "class.yaml"),
        claims=claimshapes.load([str(tmp_path / "claim.yaml")]),
    )
    carried = carry_over(load(LIBRARY / "pod-lifecycle.yaml"), under_test, ACME)
    assert not carried.skip
    classes = [o["metadata"]["name"] for o in carried.scenario.objects if o["kind"] == "DeviceClass"]
    assert classes == ["acme-all"], "the file's class for the driver gives way to the one given"
    template = next(o for o in carried.scenario.objects if o["kind"] == "ResourceClaimTemplate")
    assert template["spec"]["spec"]["devices"]["requests"] == [
        {"name": "all", "exactly": {"allocationMode": "All", "deviceClassName": "acme-all"}}
    ]


@pytest.mark.parametrize(
    ("file", "need"),
    [
        ("health-healthy-unhealthy-healthy.yaml", "needs device health set by hand"),
        ("health-unknown-when-plugin-stops.yaml", "needs device health (a health service); gpu.acme.dev serves none"),
        ("legacy-v1alpha4-driver.yaml", "needs its fault knob versions=v1alpha4 on the wire"),
        ("share-ids.yaml", "needs a device shared by capacity (allowMultipleAllocations, share IDs)"),
    ],
)
def test_a_file_that_needs_what_the_driver_does_not_offer_is_skipped_saying_what(file: str, need: str):
    carried = carry_over(load(LIBRARY / file), DRIVER, ACME)
    assert carried.skip.startswith(need), carried.skip


async def test_a_file_without_the_driver_played_is_skipped_not_replayed_with_its_own():
    (carried,) = await carry_all([load(LIBRARY / "rolling-update-two-instances.yaml")], [])
    assert not carried.skip, "no driver under test: every file replays as written"
    old = UnderTest("old", DRIVER.command)
    (carried,) = [carry_over(load(LIBRARY / "rolling-update-two-instances.yaml"), old, ACME)]
    assert carried.skip == "needs a second instance of gpu.example.com (a rolling update); --driver runs one"


def test_two_claims_at_once_are_skipped_for_a_driver_that_takes_only_all_its_devices(tmp_path: Path):
    (tmp_path / "claim.yaml").write_text("devices: {requests: [{name: all, exactly: {allocationMode: All}}]}\n")
    whole_node = UnderTest("gpu", DRIVER.command, claims=claimshapes.load([str(tmp_path / "claim.yaml")]))
    carried = carry_over(load(LIBRARY / "cdi-two-claims-two-containers.yaml"), whole_node, ACME)
    assert "claims of the driver at once" in carried.skip and "asks for all its devices" in carried.skip
    assert not carry_over(load(LIBRARY / "cdi-two-claims-two-containers.yaml"), DRIVER, ACME).skip
