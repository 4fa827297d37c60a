"""``kubelet-dra replay`` as users run it: a real subprocess (forked, ``helpers.run_kubelet_dra``), exit codes 0/1/2,
JUnit and JSON reports."""

from __future__ import annotations

import json
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from helpers import run_kubelet_dra

LIBRARY = Path(__file__).resolve().parents[3] / "scenarios"
QUICK = str(LIBRARY / "register-after-getinfo-failure.yaml")


def replay(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_kubelet_dra("replay", *args, env=env)


def test_passing_scenario_exits_0_and_writes_junit(tmp_path: Path):
    report = tmp_path / "replay.xml"
    done = replay(QUICK, "--junit", str(report))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "✓ GetInfo failure diagnosed as F3" in done.stdout
    assert "1 of 1 scenario(s) passed" in done.stdout
    suite = ET.parse(report).getroot()
    assert suite.get("name") == "kubelet-dra replay"
    assert (suite.get("failures"), suite.get("errors")) == ("0", "0")
    names = [case.get("name") for case in suite.iter("testcase")]
    assert "registered once GetInfo answers" in names
    assert {case.get("classname") for case in suite.iter("testcase")} == {"scenario.register-after-getinfo-failure"}


def test_a_fault_makes_it_exit_1_naming_the_broken_expectation(tmp_path: Path):
    report = tmp_path / "replay.xml"
    done = replay(QUICK, "--fault", "gpu:getinfo-type=CSIPlugin", "--junit", str(report), "--output", "json")
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)
    assert result["passed"] is False
    (scenario,) = result["scenarios"]
    broken = [step for step in scenario["steps"] if step["result"] == "failed"]
    assert broken[0]["name"] == "registered once GetInfo answers"
    assert "expected gpu.example.com registered=true" in broken[0]["message"]
    failures = [case for case in ET.parse(report).getroot().iter("testcase") if case.find("failure") is not None]
    assert [case.get("name") for case in failures] == ["registered once GetInfo answers"]


def test_malformed_scenario_exits_2_with_positions_and_no_traceback(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kubelet-dra.dev/v1alpha1\nkind: Scenario\nmetadata: {name: bad}\nstep:\n  - sleep: 2x\n"
    )
    done = replay(QUICK, str(bad))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert f"{bad}:1:1: missing required field 'steps'" in done.stderr
    assert f"{bad}:4:1: step: unknown field 'step' (did you mean 'steps'?" in done.stderr
    assert done.stdout == "", "nothing runs when a file is invalid"


def test_bad_fault_flag_is_a_usage_error():
    done = replay(QUICK, "--fault", "gpu-prepare-error")
    assert done.returncode == 2
    assert "DRIVER_ID:KNOB=VALUE" in done.stderr
    done = replay(QUICK, "--fault", "gpu:prepare-delay=soon")
    assert done.returncode == 2
    assert "bad value 'soon' for fault knob prepare-delay" in done.stderr
    assert "Traceback" not in done.stderr


def test_check_only_validates():
    done = replay("--check", "--output", "json", *map(str, sorted(LIBRARY.glob("*.yaml"))))
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["valid"]) >= 25


def test_the_installed_library_is_every_file_of_scenarios_and_uses_only_current_keys():
    """``--library``: the files the package carries, as a wheel user has them; no warning from the project's own."""
    done = replay("--library", "--check", "--output", "json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    valid = [Path(path) for path in json.loads(done.stdout)["valid"]]
    assert [path.name for path in valid] == sorted(path.name for path in LIBRARY.glob("*.yaml"))
    assert {path.parent.name for path in valid} == {"scenarios"} and valid[0].parent.parent.name == "kubelet_dra"


def test_without_a_file_or_the_library_it_says_what_to_give():
    done = replay()
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "kubelet-dra: error: no scenario file given (fix: give scenario files, or --library for the installed library)"
    ]


def test_check_refuses_a_driver_name_that_would_make_dirs_outside_the_work_dir(tmp_path: Path):
    """A driver's name names its dirs in the work dir: a slash or ``..`` would put them elsewhere."""
    bad = tmp_path / "escape.yaml"
    bad.write_text(
        "apiVersion: kubelet-dra.dev/v1alpha1\nkind: Scenario\nmetadata: {name: escape}\n"
        "drivers:\n  - id: gpu\n    name: ../../kd-escaped\n    command: 'true'\nsteps:\n  - sleep: 1s\n"
    )
    done = replay("--check", str(bad))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert (
        f"{bad}:6:11: drivers[0].name: bad value '../../kd-escaped': the DRA driver name it registers:"
        " a lowercase DNS subdomain such as gpu.example.com"
    ) in done.stderr


def test_under_github_actions_a_broken_expectation_is_an_annotation_at_its_line_and_a_step_summary(tmp_path: Path):
    summary = tmp_path / "step-summary.md"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    done = replay(QUICK, "--fault", "gpu:getinfo-type=CSIPlugin", "--output", "json", env=env)
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["passed"] is False, "the annotations leave the JSON document alone"
    [annotation] = [line for line in done.stderr.splitlines() if line.startswith("::")]
    line = next(
        n for n, text in enumerate(Path(QUICK).read_text().splitlines(), 1) if "registered once GetInfo" in text
    )
    assert annotation.startswith(f"::error file={QUICK},line={line},title=registered once GetInfo answers::"), (
        annotation
    )
    assert "expected gpu.example.com registered=true" in annotation
    text = summary.read_text()
    assert text.startswith("### kubelet-dra replay\n\nkubelet-dra replay: 0 of 1 scenario(s) passed\n"), text
    assert "| ✗ failed | registered once GetInfo answers | expected gpu.example.com registered=true" in text


def test_aliases_that_expand_or_hold_themselves_exit_2_at_once(tmp_path: Path):
    """go-yaml's bounds: an anchor holding itself, and a kilobyte of nested aliases (9× per level), are refused."""
    head = "apiVersion: kubelet-dra.dev/v1alpha1\nkind: Scenario\n"
    itself = tmp_path / "itself.yaml"
    itself.write_text(head + "metadata: &m {name: itself, x: *m}\nsteps: []\n")
    laughs = tmp_path / "laughs.yaml"
    levels = [f"  l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]\n" for n in range(1, 10)]
    laughs.write_text(head + "metadata: {name: laughs}\nx:\n  l0: &l0 lol\n" + "".join(levels) + "steps: []\n")
    for path, error in ((itself, "YAML anchor 'm' value contains itself"), (laughs, "document contains excessive")):
        done = replay("--check", str(path))
        assert done.returncode == 2, done.stderr[-500:]
        assert "Traceback" not in done.stderr, done.stderr[-500:]
        assert f"{path}:1:1: {error}" in done.stderr.replace("YAML document", "document")
        assert "instead of aliases" in done.stderr


def test_jobs_replay_files_at_once_and_print_each_file_s_lines_together():
    files = [str(LIBRARY / f"{name}.yaml") for name in ("apiserver-restart", "register-after-getinfo-failure")]
    done = replay("--jobs", "2", *files)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    starts = [index for index, text in enumerate(lines) if text.startswith(("apiserver-restart", "register-after"))]
    assert len(starts) == 2, lines
    first, second = sorted(starts)
    assert all(text.startswith("  ") for text in lines[first + 1 : second]), "a file's lines are not interleaved"
    report = replay("--jobs", "2", *files, "--output", "json")
    names = [scenario["name"] for scenario in json.loads(report.stdout)["scenarios"]]
    assert names == ["apiserver-restart", "register-after-getinfo-failure"], "results in the files' order"


def test_jobs_below_one_is_a_usage_error():
    done = replay("--jobs", "0", QUICK)
    assert done.returncode == 2 and "--jobs 0" in done.stderr and "Traceback" not in done.stderr


def tight(tmp_path: Path) -> Path:
    """The library's pod lifecycle with every deadline 20 ms: a pod takes longer than that to run anywhere."""
    text = (LIBRARY / "pod-lifecycle.yaml").read_text()
    assert "within: 3s}" in text
    path = tmp_path / "tight.yaml"
    path.write_text(text.replace("within: 3s}", "within: 20ms}"))
    return path


def test_a_deadline_scale_lets_a_late_expectation_pass_and_the_report_says_so(tmp_path: Path):
    """The file's 20 ms fail the pod; a scale of 500 gives it 10 s."""
    done = replay(str(tight(tmp_path)))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "not within 0.02 s" in done.stdout
    done = replay(str(tight(tmp_path)), "--deadline-scale", "500")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "deadlines ×500 (--deadline-scale)" in done.stdout
    running = next(line for line in done.stdout.splitlines() if "pod p1 phase=Running" in line)
    assert running.lstrip().startswith("✓") and "past the file's 0.02 s: stretched" in running
    done = replay(str(tight(tmp_path)), "--deadline-scale", "500", "--output", "json")
    (scenario,) = json.loads(done.stdout)["scenarios"]
    assert scenario["note"] == "deadlines ×500 (--deadline-scale)"
    (step,) = [step for step in scenario["steps"] if "pod p1 phase=Running" in step["name"]]
    assert step["stretched"] and "past the file's 0.02 s: stretched" in step["message"]


def test_auto_reads_the_machines_load_and_a_scale_below_one_is_a_usage_error(tmp_path: Path):
    done = replay(str(tight(tmp_path)), "--deadline-scale", "auto", "--output", "json")
    assert done.returncode in (0, 1), done.stderr
    (scenario,) = json.loads(done.stdout)["scenarios"]
    assert scenario["note"] == "" or "load average" in scenario["note"], "a scaled run names the load it read"
    for bad in ("0.5", "fast"):
        done = replay(QUICK, "--deadline-scale", bad)
        assert done.returncode == 2 and done.stdout == ""
        assert done.stderr.splitlines()[-1] == (
            "kubelet-dra replay: error: argument --deadline-scale: give a factor of at least 1 or auto"
        ), done.stderr
