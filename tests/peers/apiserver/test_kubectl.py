"""kubectl (the real binary, default validation) against the embedded API server."""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from kubelet_dra.workbench.testbed.serverthread import ServerThread

SLICE = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: node-a-gpu
spec:
  driver: gpu.example.com
  nodeName: node-a
  pool: {name: node-a, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes:
      model: {string: LATEST-GPU-MODEL}
"""

POD = """\
apiVersion: v1
kind: Pod
metadata:
  name: pod1
  labels: {app: demo}
spec:
  nodeName: node-a
  containers:
  - {name: app, image: "busybox:1"}
  - {name: sidecar, image: "pause:1"}
"""


Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def kubectl(kubectl_env: dict[str, str]) -> Kubectl:
    """Runs kubectl against the test's server; fails the test on a non-zero exit unless ``check=False``."""

    def run(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            ["kubectl", *args], input=stdin, env=kubectl_env, capture_output=True, text=True, timeout=60, check=False
        )
        if check:
            assert result.returncode == 0, result.stderr
        return result

    return run


def manifest(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_create_get_delete(kubectl: Kubectl, tmp_path: Path) -> None:
    created = kubectl("create", "-f", manifest(tmp_path, "slice.yaml", SLICE))
    assert created.stdout.strip() == "resourceslice.resource.k8s.io/node-a-gpu created"
    read = yaml.safe_load(kubectl("get", "resourceslice", "node-a-gpu", "-o", "yaml").stdout)
    assert read["apiVersion"] == "resource.k8s.io/v1"
    assert read["spec"]["devices"][0]["attributes"]["model"] == {"string": "LATEST-GPU-MODEL"}
    table = kubectl("get", "resourceslices").stdout.splitlines()
    assert table[0].split() == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    assert table[1].split()[:4] == ["node-a-gpu", "node-a", "gpu.example.com", "node-a"]
    assert (
        kubectl("delete", "resourceslice", "node-a-gpu").stdout.strip()
        == 'resourceslice.resource.k8s.io "node-a-gpu" deleted'
    )
    missing = kubectl("get", "resourceslice", "node-a-gpu", check=False)
    assert missing.returncode == 1 and "NotFound" in missing.stderr


def test_create_refuses_unknown_fields_without_validate_false(kubectl: Kubectl, tmp_path: Path) -> None:
    bad = manifest(tmp_path, "bad.yaml", SLICE + "extra: 1\n")
    result = kubectl("create", "-f", bad, check=False)
    assert result.returncode == 1
    assert 'unknown field "extra"' in result.stderr


def test_apply_twice_updates_the_changed_field(kubectl: Kubectl, tmp_path: Path) -> None:
    path = manifest(tmp_path, "slice.yaml", SLICE)
    assert kubectl("apply", "-f", path).stdout.strip() == "resourceslice.resource.k8s.io/node-a-gpu created"
    manifest(tmp_path, "slice.yaml", SLICE.replace("generation: 1", "generation: 2"))
    assert kubectl("apply", "-f", path).stdout.strip() == "resourceslice.resource.k8s.io/node-a-gpu configured"
    assert kubectl("get", "resourceslice", "node-a-gpu", "-o", "jsonpath={.spec.pool.generation}").stdout == "2"


def test_apply_and_patch_pods(kubectl: Kubectl, tmp_path: Path) -> None:
    path = manifest(tmp_path, "pod.yaml", POD)
    kubectl("apply", "-f", path)
    manifest(tmp_path, "pod.yaml", POD.replace("app: demo", "app: changed"))
    assert kubectl("apply", "-f", path).stdout.strip() == "pod/pod1 configured"
    kubectl("patch", "pod", "pod1", "-p", '{"spec":{"containers":[{"name":"app","image":"busybox:2"}]}}')
    images = kubectl("get", "pod", "pod1", "-o", "jsonpath={.spec.containers[*].image}").stdout
    assert images == "busybox:2 pause:1"
    kubectl("patch", "pod", "pod1", "--type", "merge", "-p", '{"metadata":{"labels":{"merged":"yes"}}}')
    labels = yaml.safe_load(kubectl("get", "pod", "pod1", "-o", "yaml").stdout)["metadata"]["labels"]
    assert labels == {"app": "changed", "merged": "yes"}


def test_api_resources_lists_dra_kinds(kubectl: Kubectl) -> None:
    rows = {line.split()[0]: line.split() for line in kubectl("api-resources").stdout.splitlines()[1:]}
    for name in ("resourceslices", "resourceclaims", "resourceclaimtemplates", "deviceclasses"):
        assert "resource.k8s.io/v1" in rows[name]
    assert rows["pods"][1:] == ["po", "v1", "true", "Pod"]


def test_explain_reads_the_openapi_schema(kubectl: Kubectl) -> None:
    explained = kubectl("explain", "resourceslices").stdout
    assert "KIND:       ResourceSlice" in explained and "spec\t<Object>" in explained


def read_line_containing(process: subprocess.Popen[str], text: str, timeout: float = 20) -> str:
    """The first stdout line of ``process`` containing ``text`` (read in a thread: pipes buffer whole lines)."""
    lines: queue.Queue[str] = queue.Queue()
    stdout = process.stdout
    assert stdout is not None

    def pump() -> None:
        for line in stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            line = lines.get(timeout=left)
        except queue.Empty:
            break
        if text in line:
            return line
    raise AssertionError(f"kubectl printed no line with {text!r}")


@pytest.mark.parametrize(
    ("resource", "path", "body", "name"),
    [
        ("resourceslices", "/apis/resource.k8s.io/v1/resourceslices", yaml.safe_load(SLICE), "node-a-gpu"),
        ("pods", "/api/v1/namespaces/default/pods", yaml.safe_load(POD), "pod1"),
    ],
)
def test_get_watch_prints_new_objects(
    apiserver: ServerThread, kubectl_env: dict[str, str], resource: str, path: str, body: dict, name: str
) -> None:
    process = subprocess.Popen(
        ["kubectl", "get", resource, "--watch", "--output-watch-events"],
        env=kubectl_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        code, created = apiserver.json("POST", path, body=body)
        assert code == 201, created
        assert read_line_containing(process, name).split()[:2] == ["ADDED", name]
    finally:
        process.kill()
        process.communicate(timeout=10)


def test_create_namespace_and_configmap_send_protobuf_and_work(kubectl: Kubectl) -> None:
    assert kubectl("create", "namespace", "drivers").stdout.strip() == "namespace/drivers created"
    kubectl("create", "configmap", "cfg", "-n", "drivers", "--from-literal=a=1", "--from-literal=b=2")
    data = yaml.safe_load(kubectl("get", "configmap", "cfg", "-n", "drivers", "-o", "yaml").stdout)["data"]
    assert data == {"a": "1", "b": "2"}
    assert "namespace/drivers" in kubectl("get", "namespaces", "-o", "name").stdout.split()
