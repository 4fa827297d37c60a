"""``kubelet-dra conformance`` in a CI job: stdout a pipe, and under GitHub Actions its annotations and summary."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from .reference import REFERENCE, with_fault

CHECK_LINE = re.compile(r"^[✓✗!\-·] [A-Z]{3}-\d{3} (must|should) .+ \(\d+\.\d\d s\)")
CI_VARIABLES = ("COLUMNS", "GITHUB_ACTIONS", "GITHUB_STEP_SUMMARY")


def conformance_in_a_pipe(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """The CLI as a CI job runs it: stdout a pipe, no terminal width, only the CI variables given."""
    clean = {key: value for key, value in os.environ.items() if key not in CI_VARIABLES}
    return subprocess.run(
        [sys.executable, "-m", "kubelet_dra", "conformance", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env={**clean, **env},
    )


def test_in_a_pipe_a_run_is_one_line_per_check_and_the_summary():
    done = conformance_in_a_pipe("--driver-cmd", REFERENCE, "--focus", "^(REG-00[1-4]|SLC-00[1-4])$")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 9, done.stdout
    assert all(CHECK_LINE.match(line) for line in lines[:8]), done.stdout
    assert re.fullmatch(r"gpu\.example\.com: kubelet \S+: 8 passed, 0 failed, .* in \d+\.\d s", lines[8]), lines[8]


def test_under_github_actions_failures_and_warnings_are_annotations_and_a_step_summary(tmp_path: Path):
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n")
    done = conformance_in_a_pipe(
        "--driver-cmd", with_fault("serve-advertised-name"), "--focus", "^VER-00[13]$",
        GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    annotations = [line for line in done.stdout.splitlines() if line.startswith("::")]
    assert len(annotations) == 2, done.stdout
    error, warning = annotations
    assert error.startswith("::error title=VER-001 every advertised DRA service answers NodePrepare/NodeUnprepare")
    assert error.split("::")[2].endswith(
        "register the service as k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin, not under another name"
    )
    assert warning.startswith("::warning title=VER-003 the advertised identifier is not served as a gRPC service")
    text = summary.read_text()
    assert text.startswith("earlier step\n### kubelet-dra conformance\n"), "the summary is appended"
    assert "1 failed, 1 warning(s) (should)" in text
    assert "| ✗ failed | VER-001 every advertised DRA service" in text
    assert "| ! warning | VER-003 the advertised identifier" in text


def test_outside_github_actions_there_is_no_annotation(tmp_path: Path):
    done = conformance_in_a_pipe("--driver-cmd", with_fault("serve-advertised-name"), "--focus", "^VER-001$")
    assert done.returncode == 1, done.stdout + done.stderr
    assert not [line for line in done.stdout.splitlines() if line.startswith("::")], done.stdout
