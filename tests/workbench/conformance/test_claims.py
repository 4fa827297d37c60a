"""``--claim``: the claims a driver accepts. Bad files are refused before anything starts (file, field, fix),
a driver whose policy refuses the default claim gets one finding with the file to pass, and with that file
the suite runs clean."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from helpers import kubelet_dra_each
from rich.console import Console

from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.workbench.conformance import suitereport as report
from kubelet_dra.workbench.conformance.options import SuiteOptions
from kubelet_dra.workbench.conformance.results import NOT_RUN, ReleaseRuns
from kubelet_dra.workbench.conformance.suggestion import example
from kubelet_dra.workbench.conformance.suiterunner import run_suite
from kubelet_dra.workbench.conformance.target import Selection, Target
from kubelet_dra.workbench.junit import FAILED
from kubelet_dra.workbench.testbed import claimshapes as shapes

from .reference import GPU, with_fault

ALL_DEVICES = "devices:\n  requests:\n  - name: tpus\n    exactly:\n      allocationMode: All\n"
FOCUS = Selection(focus=r"^(CLM-001|PRE-00[2-5]|UNP-00[1-3]|CDI-00[12]|SLC-009)$")
"""Checks that make one claim, two claims at once, a claim of several requests, and every device at once."""


def write(tmp_path: Path, text: str, name: str = "claim.yaml") -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    ("text", "field", "fix"),
    [
        ("devices: {requests: []}", "devices.requests is missing or empty", "list at least one request"),
        ("kind: Pod\nspec: {}", "kind is 'Pod'", "ResourceClaimTemplate"),
        ("devices:\n  requests:\n  - name: gpu\n    exactly: {count: 0}", "exactly.count is 0", "whole number"),
        (
            "devices:\n  requests:\n  - name: gpu\n    exactly: {allocationMode: Some}",
            "allocationMode is 'Some'",
            "All",
        ),
        ("devices:\n  requests:\n  - name: gpu\n    exactly: {colour: red}", "exactly.colour is not a field", "count"),
        (
            "devices:\n  requests:\n  - name: gpu\n    exactly: {adminAccess: true}",
            "adminAccess is not supported",
            "admin",
        ),
        ("devices:\n  requests:\n  - {name: gpu}", "requests[0] needs exactly one of exactly or firstAvailable", "one"),
        (
            "devices:\n  requests:\n  - {name: a, exactly: {}}\n  constraints:\n  - {requests: [b], matchAttribute: x}",
            "constraints[0].requests names 'b'",
            "use a",
        ),
        (
            "kind: ResourceClaimTemplate\nspec:\n  spec:\n    devices:\n"
            "      requests:\n      - {name: g, exactly: {}}\n"
            "      config:\n      - opaque: {driver: gpu.example.com}",
            "spec.spec.devices.config[0].opaque needs driver and parameters",
            "parameters",
        ),
    ],
)
def test_a_bad_claim_file_names_the_file_the_field_and_the_fix(tmp_path: Path, text: str, field: str, fix: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as refused:
        shapes.load([path])
    assert refused.value.where == f"--claim {path}" and field in refused.value.what, str(refused.value)
    assert fix in refused.value.fix


def test_a_missing_or_broken_file_is_a_one_line_error_exit_2(tmp_path: Path) -> None:
    laughs = "".join(f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]\n" for n in range(1, 10))
    not_utf8 = tmp_path / "latin1.yaml"
    not_utf8.write_bytes(b"devices: {requests: [{name: g\xe9}]}\n")
    paths = (
        str(tmp_path / "nowhere.yaml"),
        write(tmp_path, "devices: [", "broken.yaml"),
        write(tmp_path, "l0: &l0 lol\n" + laughs, "laughs.yaml"),
        write(tmp_path, "devices: &d {requests: *d}\n", "itself.yaml"),
        str(not_utf8),
    )
    ran = kubelet_dra_each(*(("conformance", "--driver-cmd", "x", "--claim", path) for path in paths))
    for path in paths:
        code, out, err = ran[("conformance", "--driver-cmd", "x", "--claim", path)]
        assert code == 2 and f"--claim {path}" not in out, (code, out, err)
        assert path in err and "Traceback" not in err, err


def test_every_document_of_a_file_is_a_shape_and_a_template_gives_its_claim_spec(tmp_path: Path) -> None:
    template = {"kind": "ResourceClaimTemplate", "spec": {"spec": yaml.safe_load(ALL_DEVICES)}}
    path = write(tmp_path, ALL_DEVICES + "---\n" + yaml.safe_dump(template))
    loaded = shapes.load([path])
    assert [shape.source for shape in loaded.given] == [f"{path} (document 1)", f"{path} (document 2)"]
    spec = loaded.spec(1, "suite-class", count=3)
    assert spec["devices"]["requests"][0]["exactly"] == {"allocationMode": "All", "deviceClassName": "suite-class"}
    with pytest.raises(shapes.NotDerivable, match="needs a claim with 2 requests"):
        loaded.spec(0, "suite-class", requests=("first", "second"))


@pytest.mark.parametrize(
    ("answer", "shape"),
    [
        ("only requests for all tpu devices (4) on the node are supported", {"allocationMode": "All"}),
        ("1 device(s) allocated, gpu.example.com prepares exactly 2", {"count": 2}),
        ("no opaque config of kind 'GpuConfig' for driver gpu.example.com", {"count": 1}),
    ],
)
def test_the_suggested_claim_follows_the_drivers_words(answer: str, shape: dict) -> None:
    _, spec = example(answer, GPU, devices=4)
    assert spec["devices"]["requests"][0]["exactly"] == shape
    configs = spec["devices"].get("config") or []
    assert [c["opaque"]["parameters"] for c in configs] == ([{"kind": "GpuConfig"}] if "kind" in answer else [])


async def test_a_claim_no_published_device_can_serve_stops_the_run_naming_the_request(tmp_path: Path) -> None:
    path = write(tmp_path, "devices:\n  requests:\n  - name: many\n    exactly: {count: 9}\n")
    options = SuiteOptions(claims=shapes.load([path]))
    with pytest.raises(ConfigError, match=r"request 'many' finds no device of the driver on node-1: needs 9"):
        await run_suite(Target(driver_cmd=with_fault("require-count", "1")), options, FOCUS)


async def test_an_all_devices_driver_gets_one_finding_and_passes_with_the_claim_it_suggests(tmp_path: Path) -> None:
    """The reference driver accepting only claims for all its devices, as a TPU driver does."""
    command = with_fault("require-all-devices")
    refused = await run_suite(Target(driver_cmd=command), SuiteOptions(outputs_dir=tmp_path), FOCUS)
    finding = refused.by_id()["CLM-001"]
    assert refused.ids(FAILED) == ["CLM-001"] and refused.exit_code == 1
    assert "only requests for all of its devices (4) on the node are supported" in finding.reason
    flag = next(line for line in finding.reason.splitlines() if "--claim " in line).split("--claim ")[1]
    assert flag == str(tmp_path / "claim-gpu.example.com.yaml"), "beside the run's outputs, not at a name in /tmp"
    assert Path(flag).stat().st_mode & 0o777 == 0o600
    assert yaml.safe_load(Path(flag).read_text()) == yaml.safe_load(ALL_DEVICES.replace("tpus", "devices"))
    blocked = {r.id for r in refused.results if r.result == NOT_RUN}
    assert blocked == {r.id for r in refused.results if r.result not in ("passed", "skipped")} - {"CLM-001"}
    assert set(refused.ids("passed")) == {"UNP-002"}, "only the check that makes no claim runs"
    assert all(refused.by_id()[check].cause == "CLM-001" for check in blocked) and len(blocked) >= 8
    junit = ET.parse(report.write_junit(tmp_path / "junit.xml", ReleaseRuns((refused,)))).getroot()
    assert (junit.get("failures"), junit.get("skipped")) == ("1", str(len(blocked) + len(refused.ids("skipped"))))
    assert "because of CLM-001" in report.summary(list(refused.results))
    console = Console(record=True, width=400)
    console.print(report.table(ReleaseRuns((refused,))), report.failures(ReleaseRuns((refused,))))
    shown = console.export_text()
    assert shown.count("because CLM-001 failed") == len(blocked), shown
    assert f"because of it, {len(blocked)} check(s) were not run" in shown

    accepted = await run_suite(Target(driver_cmd=command), SuiteOptions(claims=shapes.load([flag])), FOCUS)
    assert accepted.ids(FAILED) == [] and accepted.ids(NOT_RUN) == [], {r.id: r.reason for r in accepted.results}
    assert accepted.exit_code == 0 and len(accepted.ids("passed")) >= 8
    skipped = {r.id: r.reason for r in accepted.results if r.result == "skipped"}
    assert skipped["PRE-003"].startswith("needs 3 claims at once; only 1 of the claim(s) of --claim"), skipped
