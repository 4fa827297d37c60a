"""``replay --driver``: library files replayed with a driver the files were not written for.

The driver here is a process the files have never met: the reference driver's program under another name
(``gpu.acme.dev``), without a health service, and in one test with the policy of drivers that take only
claims for all their devices. The real third-party drivers replay the whole library in the interop tier.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from .library import LIBRARY
from .test_cli import replay

ACME = (
    "gpu={python} -m kubelet_dra driver --driver-name gpu.acme.dev --node-name {node} --kubeconfig {kubeconfig}"
    " --registry-dir {registry_dir} --plugin-dir {plugin_dir} --cdi-root {cdi_root} --devices 2"
)
ALL_DEVICES = "devices: {requests: [{name: all, exactly: {allocationMode: All}}]}\n"


def _report(stdout: str) -> dict[str, dict]:
    return {scenario["name"]: scenario for scenario in json.loads(stdout)["scenarios"]}


def test_a_driver_of_another_name_holds_and_what_it_lacks_is_a_skip_with_its_reason(tmp_path: Path):
    junit = tmp_path / "replay.xml"
    files = [str(LIBRARY / f"{name}.yaml") for name in ("pod-lifecycle", "health-unknown-when-plugin-stops")]
    done = replay("--driver", ACME, *files, "--output", "json", "--junit", str(junit))
    assert done.returncode == 0, done.stdout + done.stderr
    report = _report(done.stdout)
    assert report["pod-lifecycle"]["result"] == "passed"
    assert report["health-unknown-when-plugin-stops"]["result"] == "skipped"
    assert report["health-unknown-when-plugin-stops"]["skipped"] == (
        "needs device health (a health service); gpu.acme.dev serves none"
    )
    skipped = [case for case in ET.parse(junit).getroot().iter("testcase") if case.find("skipped") is not None]
    assert [case.get("classname") for case in skipped] == ["scenario.health-unknown-when-plugin-stops"]


def test_cdi_ids_that_resolve_to_no_spec_fail_the_carried_expectation_after_the_driver_wait():
    broken = ACME + " --fault-cdi-skip-write true"
    done = replay("--driver", broken, "--driver-wait", "5", str(LIBRARY / "pod-lifecycle.yaml"), "--output", "json")
    assert done.returncode == 1, done.stdout + done.stderr
    (failed,) = [step for step in _report(done.stdout)["pod-lifecycle"]["steps"] if step["result"] == "failed"]
    assert "resolving in the CDI root" in failed["message"], failed
    assert "CDI devices not found in any spec file" in failed["message"], failed
    assert "stretched to 5 s" in failed["message"], failed


def test_a_driver_that_takes_only_all_its_devices_holds_with_its_claim(tmp_path: Path):
    claim = tmp_path / "all.yaml"
    claim.write_text(ALL_DEVICES)
    whole = ACME + " --fault-require-all-devices true"
    files = [str(LIBRARY / f"{name}.yaml") for name in ("pod-lifecycle", "cdi-two-claims-two-containers")]
    done = replay("--driver", whole, "--claim", str(claim), *files, "--output", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = _report(done.stdout)
    assert report["pod-lifecycle"]["result"] == "passed"
    assert "claims of the driver at once" in report["cdi-two-claims-two-containers"]["skipped"]


def test_the_driver_under_test_that_never_registers_is_one_line_and_exit_1():
    done = replay("--driver", "gpu=sh -c 'echo no sockets here; exit 3'", str(LIBRARY / "pod-lifecycle.yaml"))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "exited (code 3) before it registered" in done.stderr and "no sockets here" in done.stderr


def test_a_driver_that_reports_device_health_holds_the_health_files():
    health = ACME + " --health --health-interval 0.5"
    done = replay("--driver", health, str(LIBRARY / "health-unknown-when-plugin-stops.yaml"), "--output", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _report(done.stdout)["health-unknown-when-plugin-stops"]["result"] == "passed"
