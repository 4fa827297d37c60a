"""``--device-class FILE``: a file that is not a DeviceClass manifest is one usage error naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import run_kubelet_dra

from kubelet_dra.peers.errors import UsageError
from kubelet_dra.workbench.testbed.claimshapes import device_class_file
from kubelet_dra.workbench.testbed.serverthread import ServerThread

from .reference import REFERENCE

LAUGHS = b"  l0: &l0 lol\n" + b"".join(
    f"  l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9)}]\n".encode() for n in range(1, 10)
)
"""A few hundred bytes that expand 9x per level when anything walks them (the API server's encoder would)."""


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"kind: DeviceClass\nmetadata: gpu\n", "not a DeviceClass manifest with a name"),
        (b"kind: DeviceClass\nmetadata: {name: \xe9}\n", "cannot read the DeviceClass manifest"),
        (b"kind: DeviceClass\nmetadata: &m {name: gpu, x: *m}\n", "anchor 'm' value contains itself"),
        (b"kind: DeviceClass\nmetadata: {name: gpu}\nx:\n" + LAUGHS, "document contains excessive aliasing"),
    ],
)
def test_a_file_that_is_not_a_device_class_is_a_usage_error(tmp_path: Path, content: bytes, message: str) -> None:
    path = tmp_path / "class.yaml"
    path.write_bytes(content)
    with pytest.raises(UsageError) as refused:
        device_class_file(path)
    assert refused.value.where == str(path) and message in refused.value.what, str(refused.value)


def test_a_device_class_already_in_the_cluster_is_neither_replaced_nor_deleted(
    tmp_path: Path, apiserver: ServerThread
) -> None:
    """The suite deletes the class it created when it ends: one of the same name it found is not its to delete."""
    classes = "/apis/resource.k8s.io/v1/deviceclasses"
    selectors = [{"cel": {"expression": "device.driver == 'theirs.example.com'"}}]
    theirs = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "spec": {"selectors": selectors}}
    for name in ("production", "kubelet-dra-conformance"):
        created = apiserver.request("POST", classes, body={**theirs, "metadata": {"name": name}})
        assert created.status == 201, created.data
    manifest = tmp_path / "class.yaml"
    manifest.write_text("apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: production}\n")
    common = ("--driver-cmd", REFERENCE, "--kubeconfig", str(apiserver.kubeconfig), "--focus", "^REG-001$")
    refused = run_kubelet_dra("conformance", *common, "--device-class", str(manifest))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert f"--device-class {manifest}: DeviceClass production already exists" in refused.stderr
    default = run_kubelet_dra("conformance", *common)
    assert default.returncode == 0, default.stdout + default.stderr
    for name in ("production", "kubelet-dra-conformance"):
        code, kept = apiserver.json("GET", f"{classes}/{name}")
        assert code == 200 and kept["spec"]["selectors"] == selectors, (name, kept)
        apiserver.request("DELETE", f"{classes}/{name}")
    code, listed = apiserver.json("GET", classes)
    assert not [item for item in listed["items"] if item["metadata"]["name"].startswith("kubelet-dra-conformance")]
