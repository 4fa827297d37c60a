"""``kubelet-dra checkpoint show|verify`` as an operator runs it: a real subprocess, real files, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from kubelet_dra.kubelet.cm.dra.state.checkpoint import ClaimInfoState, DeviceState, encode

FIXTURES = Path(__file__).parents[3] / "fixtures" / "kubelet-1.36"
ONE_CLAIM = FIXTURES / "dra_manager_state.one-claim-two-devices"
EMPTY = FIXTURES / "dra_manager_state.empty"


def run_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubelet_dra", "checkpoint", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={key: value for key, value in os.environ.items() if key != "COLUMNS"},  # stdout a pipe, as in CI
    )


@pytest.fixture
def corrupt(tmp_path: Path) -> Path:
    path = tmp_path / "dra_manager_state"
    path.write_bytes(ONE_CLAIM.read_bytes().replace(b"claim1", b"claim2"))
    return path


def test_show_lists_claim_pods_and_devices_each_on_one_line_in_a_pipe():
    result = run_cli("show", ONE_CLAIM)
    assert result.returncode == 0, result.stderr
    for text in (
        "default/claim1",
        "ff972946-791f-4b04-80f1-fd5509b4828c",
        "d926a4ca-593d-434c-af31-49d5e155fab9",
        "gpu.example.com",
        "lab-node/gpu-0",
        "lab-node/gpu-1",
        "k8s.gpu.example.com/gpu=ff972946-791f-4b04-80f1-fd5509b4828c-gpu-1",
    ):
        assert text in result.stdout


def test_show_json_is_the_checkpoint_content():
    result = run_cli("show", ONE_CLAIM, "--output", "json")
    assert result.returncode == 0, result.stderr
    [claim] = json.loads(result.stdout)
    assert claim["namespace"] == "default" and claim["claim_name"] == "claim1"
    assert claim["pod_uids"] == ["d926a4ca-593d-434c-af31-49d5e155fab9"]
    devices = claim["drivers"]["gpu.example.com"]
    assert [d["device_name"] for d in devices] == ["gpu-0", "gpu-1"]
    assert devices[0]["request_names"] == ["gpu"] and devices[0]["share_id"] is None
    assert devices[0]["cdi_device_ids"][0] == "k8s.gpu.example.com/gpu=common"


def test_show_of_an_empty_checkpoint():
    result = run_cli("show", EMPTY)
    assert result.returncode == 0, result.stderr
    assert "no prepared claims" in result.stdout


@pytest.mark.parametrize("path", [ONE_CLAIM, EMPTY])
def test_verify_accepts_kubelet_files(path):
    result = run_cli("verify", path)
    assert result.returncode == 0, result.stderr
    assert "valid checkpoint" in result.stdout and "as a kubelet writes it" in result.stdout


def test_verify_refuses_a_corrupt_file_with_the_reason(corrupt):
    result = run_cli("verify", corrupt)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert f"{corrupt}: checkpoint is corrupted" in result.stderr
    assert "CRC-32 of Data" in result.stderr


def test_verify_json_reports_corruption_on_stdout(corrupt):
    result = run_cli("verify", corrupt, "--output", "json")
    assert result.returncode == 1
    report = json.loads(result.stdout)
    assert report["valid"] is False and "checkpoint is corrupted" in report["error"]


def test_show_of_malformed_json_names_the_problem(tmp_path):
    path = tmp_path / "state"
    path.write_text('{"Data": 1}')
    result = run_cli("show", path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "Data: expected string, found integer" in result.stderr


def test_unreadable_file_and_missing_argument_exit_2(tmp_path):
    missing = run_cli("verify", tmp_path / "nope")
    assert missing.returncode == 2
    assert "No such file or directory" in missing.stderr and "Traceback" not in missing.stderr
    usage = run_cli("verify")
    assert usage.returncode == 2
    assert "FILE" in usage.stderr and "Traceback" not in usage.stderr


def test_verify_tells_a_hand_written_but_loadable_file_apart(tmp_path):
    path = tmp_path / "state"
    data = '{"ClaimInfoStateList":null}'
    path.write_text(json.dumps({"Data": data, "Checksum": zlib.crc32(data.encode())}))
    result = run_cli("verify", path, "--output", "json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"file": str(path), "valid": True, "claims": 0, "canonical": False}


def test_show_prints_hand_edited_brackets_literally(tmp_path):
    claim = ClaimInfoState(
        claim_uid="uid[/x]",
        claim_name="c[bold]",
        namespace="ns",
        pod_uids=frozenset({"[/p]"}),
        driver_state={"d.example.com": (DeviceState("pool", "dev[/]", cdi_device_ids=("a.b/c=[/d]",)),)},
    )
    path = tmp_path / "[state]"
    path.write_bytes(encode([claim]))
    result = run_cli("show", path)
    assert result.returncode == 0, result.stderr
    for text in ("ns/c[bold]", "uid[/x]", "[/p]", "pool/dev[/]", "a.b/c=[/d]", str(path)):
        assert text in result.stdout


@pytest.mark.parametrize(("content", "where"), [(b"[" * 100_000, "file"), (None, "Data")])
def test_show_of_a_deeply_nested_file_names_the_json_path(tmp_path, content, where):
    data = "[" * 100_000
    path = tmp_path / "state"
    path.write_bytes(content or json.dumps({"Data": data, "Checksum": zlib.crc32(data.encode())}).encode())
    result = run_cli("show", path)
    assert result.returncode == 1, result.stderr[-500:]
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr[-500:]
    assert f"{path}: {where}: not valid JSON: nested too deep to read (fix: " in result.stderr
