"""``kubelet-dra apiserver`` as a user runs it: a real process, signals, restarts with --data-dir."""

from __future__ import annotations

import json
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from kubelet_dra.workbench.testbed.serverthread import resource_slice_manifest as slice_manifest


class Process:
    """A running ``kubelet-dra apiserver --output json`` and the announcement it printed."""

    def __init__(self, *args: str) -> None:
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "kubelet_dra", "apiserver", "--output", "json", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.popen.stdout is not None
        text = ""
        for line in self.popen.stdout:
            text += line
            if line.startswith("}"):
                break
        assert text, self.popen.stderr.read() if self.popen.stderr else ""
        self.announced: dict[str, Any] = json.loads(text)

    def api(self, kubeconfig: str | None = None) -> client.ApiClient:
        return config.new_client_from_config(config_file=kubeconfig or self.announced["kubeconfig"])

    def terminate(self) -> tuple[int, str]:
        self.popen.send_signal(signal.SIGTERM)
        _, stderr = self.popen.communicate(timeout=30)
        return self.popen.returncode, stderr


@pytest.fixture
def processes() -> Iterator[list[Process]]:
    started: list[Process] = []
    yield started
    for process in started:
        if process.popen.poll() is None:  # SIGTERM first: a stopped server removes its temp dir
            process.popen.send_signal(signal.SIGTERM)
            try:
                process.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.popen.kill()
                process.popen.wait()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubelet_dra", "apiserver", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_data_dir_keeps_objects_ca_and_tokens_across_restarts(tmp_path: Path, processes: list[Process]) -> None:
    data_dir = tmp_path / "data"
    first = Process("--listen", "127.0.0.1:0", "--data-dir", str(data_dir))
    processes.append(first)
    kubeconfig = first.announced["kubeconfig"]
    assert kubeconfig == str(data_dir / "admin.kubeconfig")
    with first.api() as api:
        created = client.ResourceV1Api(api).create_resource_slice(slice_manifest("kept"))
    code, stderr = first.terminate()
    assert code == 0 and "Traceback" not in stderr

    port = first.announced["url"].rsplit(":", 1)[1]
    second = Process(
        "--listen", f"127.0.0.1:{port}", "--data-dir", str(data_dir), "--kubeconfig-out", str(tmp_path / "new")
    )
    processes.append(second)
    with second.api(kubeconfig) as api:
        kept = client.ResourceV1Api(api).read_resource_slice("kept")
        assert kept.metadata.uid == created.metadata.uid
        again = client.ResourceV1Api(api).create_resource_slice(slice_manifest("after-restart"))
        assert int(again.metadata.resource_version) > int(created.metadata.resource_version)
    code, stderr = second.terminate()
    assert code == 0 and "Traceback" not in stderr


def test_node_restricted_writes_a_kubeconfig_per_node(tmp_path: Path, processes: list[Process]) -> None:
    process = Process(
        "--listen",
        "127.0.0.1:0",
        "--kubeconfig-out",
        str(tmp_path / "admin.kubeconfig"),
        "--node-restricted",
        "--node",
        "n1",
    )
    processes.append(process)
    node_config = Path(process.announced["node_kubeconfigs"]["n1"])
    assert node_config == tmp_path / "admin.node-n1.kubeconfig"
    assert stat.S_IMODE(node_config.stat().st_mode) == 0o600
    with process.api(str(node_config)) as api:
        resources = client.ResourceV1Api(api)
        resources.create_resource_slice(slice_manifest("mine", node="n1"))
        with pytest.raises(client.ApiException) as denied:
            resources.create_resource_slice(slice_manifest("theirs", node="n2"))
        assert denied.value.status == 403


def test_text_output_tells_how_to_use_it(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "k.kubeconfig"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kubelet_dra",
            "apiserver",
            "--listen",
            "127.0.0.1:0",
            "--kubeconfig-out",
            str(kubeconfig),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    lines = []
    for line in process.stdout:
        lines.append(line)
        if line.startswith("Press Ctrl-C"):
            break
    process.send_signal(signal.SIGINT)
    rest, stderr = process.communicate(timeout=30)
    text = "".join(lines)
    assert f"export KUBECONFIG={kubeconfig}" in text and "kubectl get resourceslices" in text
    assert process.returncode == 0 and "Traceback" not in stderr and "API server stopped." in rest


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (("--listen", "nonsense"), "--listen: cannot parse listen address 'nonsense'"),
        (("--listen", "0.0.0.0:6443"), "--allow-remote"),
        (("--listen", "127.0.0.1:0", "--node", "n1"), "--node: "),
        (
            ("--listen", "127.0.0.1:0", "--node-restricted", "--node", "a/b"),
            "--node: 'a/b' is not a node name: a lowercase",
        ),
        (("--listen", "127.0.0.1:0", "--node-restricted", "--node", "../x"), "--node: '../x' is not a node name"),
    ],
)
def test_bad_flags_are_usage_errors(args: tuple[str, ...], expected: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert expected in result.stderr and "(fix: " in result.stderr
    assert "Traceback" not in result.stderr
