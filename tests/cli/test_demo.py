"""``kubelet-dra demo`` as a new user runs it: a real process, the whole flow, nothing left behind."""

import json
import subprocess
import sys
from pathlib import Path

STEPS = [
    "driver registered",
    "ResourceSlices published",
    "claim generated from the template and allocated",
    "NodePrepareResources",
    "pod Running",
    "CDI devices for container main",
    "NodeUnprepareResources",
    "pod deleted, generated claim deleted",
]


def run_demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubelet_dra", "demo", *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_demo_runs_every_step_and_cleans_up():
    result = run_demo("--output", "json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert [step["step"] for step in report["steps"]] == STEPS
    details = {step["step"]: step["detail"] for step in report["steps"]}
    assert "service v1.DRAPlugin" in details["driver registered"]
    assert "gpu.example.com/demo-node/device-" in details["claim generated from the template and allocated"]
    assert ", OK; devices demo-node/device-" in details["NodePrepareResources"]
    assert "k8s.gpu.example.com/device=common" in details["NodePrepareResources"]
    assert "k8s.gpu.example.com/device=" in details["CDI devices for container main"]
    assert not Path(report["workdir"]).exists(), "the demo removes its work dir"
    assert "Traceback" not in result.stderr


def test_demo_text_output_is_a_readable_summary():
    result = run_demo()
    assert result.returncode == 0, result.stderr
    for title in STEPS:
        assert f"✓ {title}" in result.stdout
    assert "every step held" in result.stdout
    assert "[k8s.gpu.example.com/device=common, " in result.stdout, "CDI IDs are shown, not eaten as markup"
    assert result.stderr == "", "logs go to the work dir, not the terminal, at -v 0"
