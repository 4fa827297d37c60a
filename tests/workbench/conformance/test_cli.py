"""``kubelet-dra conformance`` as CI runs it: a real subprocess (forked, ``helpers.run_kubelet_dra``), real exit codes,
JSON and JUnit output."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import kubelet_dra, kubelet_dra_each, remove_kept_workdirs, run_kubelet_dra
from realk8s import TEST_DRIVER, example_driver_cmd, kubernetes_test_driver_cmd

from .reference import REFERENCE, already_running, with_fault


def conformance(*args: str) -> subprocess.CompletedProcess[str]:
    return run_kubelet_dra("conformance", *args)


def test_list_shows_the_selected_checks_with_tags_levels_rules_and_references():
    result = conformance("--list", "--tags", "registration", "--output", "json")
    assert result.returncode == 0, result.stderr
    listed = json.loads(result.stdout)
    assert {c["id"] for c in listed} >= {"REG-001", "REG-012", "VER-004"}
    assert all("registration" in c["tags"] and c["reference"] for c in listed)
    assert all(c["rule"]["text"] and c["rule"]["source"] for c in listed)
    levels = {c["id"]: c["level"] for c in listed}
    assert (levels["REG-004"], levels["REG-012"]) == ("must", "should")
    text = conformance("--list", "--focus", "^HEA-002$").stdout
    assert "HEA-002  should" in text and "should be a complete list for the driver" in text


USAGE_ERRORS = [
    ((), "give either --driver-cmd or --registry-dir"),
    (("--registry-dir", "/tmp"), "--registry-dir needs --kubeconfig"),
    (("--driver-cmd", "x", "--kubeconfig", "k", "--node-restricted"), "only with the embedded API server"),
    (("--driver-cmd", "x", "--focus", "("), "--focus '(' is not a regular expression"),
    (("--driver-cmd", "x", "--tags", "gpu"), "unknown tag(s) gpu"),
    (("--driver-cmd", "drv --node {nodename}"), "unknown placeholder {nodename}"),
    (("--driver-cmd", "x", "--idempotency-count", "0"), "must be at least 1"),
    (("--registry-dir", "/r", "--kubeconfig", "k", "--node-restricted"), "only with the embedded API server"),
    (("--reference-driver", "--driver-cmd", "x"), "--reference-driver and --driver-cmd both name the driver"),
]


@pytest.fixture(scope="module")
def usage_errors() -> dict[tuple[str, ...], tuple[int, str, str]]:
    """Every usage-error command line run once, all in one process."""
    return kubelet_dra_each(*(("conformance", *args) for args, _ in USAGE_ERRORS))


@pytest.mark.parametrize(("args", "message"), USAGE_ERRORS)
def test_usage_errors_exit_2_with_one_line(args: tuple[str, ...], message: str, usage_errors):
    code, _, err = usage_errors[("conformance", *args)]
    assert code == 2
    assert message in err
    assert "Traceback" not in err


def test_the_reference_driver_that_ships_with_kubelet_dra_is_a_driver_under_test_with_its_flags(tmp_path: Path):
    """Nothing to install: the suite against the bundled driver, here with four devices and a fault it must catch."""
    result = conformance("--reference-driver", "--devices 4", "--focus", "^(REG-002|PRE-001)$", "--output", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert {check["id"]: check["result"] for check in report["checks"]} == {"REG-002": "passed", "PRE-001": "passed"}
    assert report["capabilities"]["driver_name"] == "gpu.example.com" and report["capabilities"]["reference"]
    junit = str(tmp_path / "c.xml")  # the run's outputs, and the claim it suggests beside them
    broken = conformance("--reference-driver", "--fault-prepare-error boom", "--focus", "^CLM-001$", "--junit", junit)
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "✗ CLM-001" in broken.stdout and "boom" in broken.stdout


def test_passing_run_exits_0_with_json_and_junit(tmp_path: Path):
    report = tmp_path / "conformance.xml"
    result = conformance(
        "--driver-cmd", f"{REFERENCE} --health", "--focus", "^(REG-00[1-4]|SLC-001|VER-00[18])$", "--output",
        "json", "--junit", str(report),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    document = json.loads(result.stdout)
    assert document["passed"] and document["counts"] == {
        "passed": 7,
        "failed": 0,
        "warning": 0,
        "skipped": 0,
        "not run": 0,
    }
    assert {check["level"] for check in document["checks"]} == {"must"}
    assert document["capabilities"]["driver_name"] == "gpu.example.com"
    assert document["capabilities"]["health_services"] == ["v1.DRAResourceHealth", "v1alpha1.DRAResourceHealth"]
    suite = ET.parse(report).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("7", "0", "0")
    names = [case.get("name", "") for case in suite.iter("testcase")]
    assert names[0].startswith("REG-001 ") and any(name.startswith("VER-008 ") for name in names)
    assert {case.get("classname") for case in suite.iter("testcase")} == {
        "conformance.REG",
        "conformance.SLC",
        "conformance.VER",
    }


async def test_a_running_driver_is_checked_through_its_registry_dir_and_kubeconfig():
    async with already_running() as target:
        assert target.registry_dir and target.kubeconfig and target.cdi_root
        code, stdout, stderr = await kubelet_dra(
            "conformance", "--registry-dir", target.registry_dir,
            "--kubeconfig", target.kubeconfig, "--cdi-root", target.cdi_root,
            "--focus", "^(REG-00[2-4]|PRE-002|CDI-002|LIF-004)$", "--output", "json", timeout=120,
        )  # fmt: skip
    assert code == 0, stdout + stderr
    document = json.loads(stdout)
    results = {result["id"]: result for result in document["checks"]}
    assert {key for key, result in results.items() if result["result"] == "passed"} == {
        "REG-002", "REG-003", "REG-004", "PRE-002", "CDI-002",
    }  # fmt: skip
    assert results["LIF-004"]["result"] == "skipped" and "restart" in results["LIF-004"]["reason"]


def test_failing_run_exits_1_and_shows_the_failed_checks_calls_and_the_warnings(tmp_path: Path):
    report = tmp_path / "conformance.xml"
    result = conformance(
        "--driver-cmd", with_fault("serve-advertised-name"), "--focus", "^VER-00[13]$", "--junit", str(report),
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "VER-001 [must]" in out and "VER-003 [warning, should]" in out, out
    assert "1 failed, 1 warning(s) (should)" in out
    assert "k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources → UNIMPLEMENTED" in out
    assert "v1.DRAPlugin/NodePrepareResources → OK" in out, "VER-003's call shows the driver served the wrong name"
    assert "last lines of the driver's log" in out
    assert "each line explained: docs/kubelet-messages.md" in out  # where the kubelet's words for it are read
    cases = {case.get("name", "")[:7]: case for case in ET.parse(report).getroot().iter("testcase")}
    failure = cases["VER-001"].find("failure")
    assert failure is not None and "UNIMPLEMENTED" in (failure.text or "")
    assert cases["VER-003"].find("failure") is None, "a should-finding is a warning, not a failure"
    properties = {p.get("name"): p.get("value") for p in cases["VER-003"].iter("property")}
    assert properties["level"] == "should" and "v1.DRAPlugin" in properties["warning"]
    assert "v1.DRAPlugin/NodePrepareResources → OK" in (cases["VER-003"].findtext("system-out") or "")


def test_two_kubelet_releases_run_the_suite_twice_into_one_table_and_one_junit_file(tmp_path: Path):
    report = tmp_path / "conformance.xml"
    focus = ("--focus", "^(REG-004|VER-005)$")
    result = conformance("--driver-cmd", REFERENCE, *focus, "--kubelet-version", "1.36,1.37", "--junit", str(report))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "kubelet 1.36: 2 passed" in result.stdout and "kubelet 1.37: 2 passed" in result.stdout
    names = sorted(case.get("name", "") for case in ET.parse(report).getroot().iter("testcase"))
    assert [name.rsplit(" ", 2)[-2:] for name in names] == [["[kubelet", "1.36]"], ["[kubelet", "1.37]"]] * 2
    document = json.loads(
        conformance("--driver-cmd", REFERENCE, *focus, "--kubelet-version", "1.36,1.37", "--output", "json").stdout
    )
    assert [run["kubeletVersion"] for run in document["runs"]] == ["1.36", "1.37"]
    assert document["counts"]["passed"] == 4 and document["passed"]
    again = conformance("--driver-cmd", REFERENCE, "--kubelet-version", "1.37,1.37")
    assert again.returncode == 2 and "does not name each kubelet release once" in again.stderr


def test_the_pytest_plugin_makes_each_check_a_test(tmp_path: Path):
    report = tmp_path / "pytest.xml"
    plugin = (
        "-p",
        "kubelet_dra.workbench.conformance.pytest_plugin",
        "--pyargs",
        "kubelet_dra.workbench.conformance",
        "-p",
        "no:cacheprovider",
    )
    command = [sys.executable, "-m", "pytest", *plugin, "-k", "REG-001 or REG-004", f"--junitxml={report}"]
    broken = subprocess.run(
        [*command, "--driver-cmd", with_fault("getinfo-type", "CSIPlugin")],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "1 failed, 1 passed" in broken.stdout
    assert "GetInfo type is 'CSIPlugin'" in broken.stdout
    cases = {case.get("name"): case for case in ET.parse(report).getroot().iter("testcase")}
    assert cases["test_check[REG-004]"].find("failure") is not None
    untargeted = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert untargeted.returncode == 0 and "2 skipped" in untargeted.stdout, untargeted.stdout
    exiting = subprocess.run(
        [*command, "--driver-cmd", "sh -c 'echo no devices on this host >&2; exit 4'"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )  # fmt: skip
    assert exiting.returncode == 1, exiting.stdout + exiting.stderr
    assert exiting.stdout.count("the driver exited with code 4 as it started") == 1, exiting.stdout
    assert "\nno devices on this host" in exiting.stdout and "Traceback" not in exiting.stdout
    assert remove_kept_workdirs(exiting.stdout), "the kept work dir with the driver's log is named"


def test_a_driver_that_exits_at_start_stops_the_run_once_with_its_log():
    reason = "F1125 fatal: flag --datadir: /var/lib/kubelet/plugins/x: no such file or directory"
    result = conformance("--driver-cmd", f"sh -c 'echo starting; echo \"{reason}\" >&2; exit 3'")
    assert result.returncode == 1 and not result.stdout
    assert result.stderr.count("the driver exited with code 3 as it started; no check was run") == 1
    assert f"\n{reason}\n" in result.stderr, "the reason is printed in full, on its own line"
    assert "command: sh -c" in result.stderr and "Traceback" not in result.stderr
    assert "REG-001" not in result.stderr, "no check ran"
    assert remove_kept_workdirs(result.stderr), "the kept work dir with the driver's log is named"


def test_help_shows_the_real_drivers_commands_the_interop_tests_run():
    """The commands in ``--help`` are the ones proven against the real drivers, word for word."""
    result = conformance("--help")
    assert result.returncode == 0, result.stderr
    shown = " ".join(result.stdout.split())
    bin_dir = Path("/bin-dir")
    for command in (example_driver_cmd(bin_dir, "gpu"), kubernetes_test_driver_cmd(bin_dir)):
        assert command.replace(f"{bin_dir}/", "") in shown, command
    assert f"--driver-name {TEST_DRIVER} --driver-cmd" in shown


def test_record_calls_traces_the_handshake_and_every_check_call(tmp_path: Path):
    trace = tmp_path / "calls.jsonl"
    result = conformance("--driver-cmd", REFERENCE, "--focus", "^PRE-001$", "--record-calls", str(trace))
    assert result.returncode == 0, result.stderr
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    methods = [record["method"].rsplit("/", 1)[1] for record in records]
    handshake = [m for m in methods if m in ("GetInfo", "NotifyRegistrationStatus")][:2]
    assert methods[0] == "GetInfo" and handshake == ["GetInfo", "NotifyRegistrationStatus"], methods
    assert "NodePrepareResources" in methods, "the check's own calls are there too"
    assert methods.index("NotifyRegistrationStatus") < methods.index("NodePrepareResources"), methods
    ids = [record["request_id"] for record in records]
    assert all(isinstance(i, int) and i > 0 for i in ids) and len(set(ids)) == len(ids)


def test_a_suggested_claim_is_written_beside_the_junit_report_and_named_in_the_finding(tmp_path: Path):
    reports = tmp_path / "reports"
    reports.mkdir()
    result = conformance(
        "--driver-cmd", with_fault("require-all-devices"), "--focus", "^CLM-001$", "--junit", str(reports / "c.xml"),
    )  # fmt: skip
    assert result.returncode == 1, result.stdout + result.stderr
    suggested = reports / "claim-gpu.example.com.yaml"
    assert f"--claim {suggested}" in " ".join(result.stdout.split()), result.stdout
    assert suggested.stat().st_mode & 0o777 == 0o600
    assert "allocationMode: All" in suggested.read_text()
