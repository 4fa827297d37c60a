"""``--device-class FILE``: a file that is not a DeviceClass manifest is one usage error naming it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubelet_dra.peers.errors import UsageError
from kubelet_dra.workbench.conformance.target import device_class_file

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
