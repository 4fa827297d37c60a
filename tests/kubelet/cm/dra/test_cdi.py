"""CDI device IDs resolved against the spec files the example driver really writes, copied into temp roots."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kubelet_dra.kubelet.cm.dra.state.checkpoint import decode
from kubelet_dra.peers.errors import DriverError
from kubelet_dra.workbench.testbed.cdispecs import CDIResolutionError, ContainerEdits, resolve

FIXTURES = Path(__file__).parents[3] / "fixtures"
DRIVER_SPECS = FIXTURES / "dra-example-driver"
CLAIM_UID = "ff972946-791f-4b04-80f1-fd5509b4828c"
GPU0 = f"k8s.gpu.example.com/gpu={CLAIM_UID}-gpu-0"
COMMON = "k8s.gpu.example.com/gpu=common"


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    """``/etc/cdi`` (empty) and ``/var/run/cdi`` (where the example driver writes) lookalikes."""
    etc, run = tmp_path / "etc-cdi", tmp_path / "run-cdi"
    etc.mkdir()
    shutil.copytree(DRIVER_SPECS, run)
    return etc, run


def test_every_cdi_id_in_the_kubelet_checkpoint_resolves(roots):
    [claim] = decode((FIXTURES / "kubelet-1.36" / "dra_manager_state.one-claim-two-devices").read_bytes(), where="f")
    ids = [cdi_id for device in claim.driver_state["gpu.example.com"] for cdi_id in device.cdi_device_ids]
    resolved = resolve(ids, roots)
    assert [device.cdi_id for device in resolved] == ids
    by_id = {device.cdi_id: device for device in resolved}
    assert by_id[COMMON].spec_file == roots[1] / "cdi-spec-common.yaml"
    assert by_id[COMMON].edits.env == ("KUBERNETES_NODE_NAME=lab-node", "DRA_RESOURCE_DRIVER_NAME=gpu.example.com")
    assert by_id[GPU0].spec_file == roots[1] / "cdi-spec-claim.yaml"
    assert "GPU_DEVICE_0=gpu-0" in by_id[GPU0].edits.env
    assert not any("GPU_DEVICE_1" in env for env in by_id[GPU0].edits.env)


def test_spec_level_edits_come_before_device_level_edits(tmp_path):
    spec = {
        "cdiVersion": "0.6.0",
        "kind": "vendor.example/nic",
        "containerEdits": {"env": ["COMMON=1"], "mounts": [{"hostPath": "/lib/x", "containerPath": "/lib/x"}]},
        "devices": [
            {
                "name": "nic0",
                "containerEdits": {
                    "env": ["NIC=0"],
                    "deviceNodes": [{"path": "/dev/nic0"}],
                    "hooks": [{"hookName": "createContainer", "path": "/bin/setup"}],
                },
            }
        ],
    }
    (tmp_path / "vendor.json").write_text(json.dumps(spec))
    [device] = resolve(["vendor.example/nic=nic0"], [tmp_path])
    assert device.edits == ContainerEdits(
        env=("COMMON=1", "NIC=0"),
        device_nodes=({"path": "/dev/nic0"},),
        mounts=({"hostPath": "/lib/x", "containerPath": "/lib/x"},),
        hooks=({"hookName": "createContainer", "path": "/bin/setup"},),
    )


def test_missing_spec_file_names_the_id_the_roots_and_the_fix(roots):
    (roots[1] / "cdi-spec-claim.yaml").unlink()
    with pytest.raises(CDIResolutionError) as caught:
        resolve([COMMON, GPU0, "bad-id"], roots)
    err = caught.value
    assert isinstance(err, DriverError)
    assert err.unresolved == (GPU0, "'bad-id' (not vendor/class=name)")
    assert GPU0 in str(err) and COMMON not in err.what
    assert str(roots[0]) in err.where and str(roots[1]) in err.where
    assert "the driver must write a CDI spec file" in err.fix


@pytest.mark.parametrize(
    ("name", "content", "reason"),
    [
        ("broken.yaml", "cdiVersion: 0.3.0\nkind: [unclosed\n", "cannot parse"),
        ("broken.json", '{"cdiVersion": "0.3.0",', "cannot parse"),
        ("future.yaml", "cdiVersion: 1.0.0\nkind: a.b/c\ndevices: [{name: x}]\n", "cdiVersion '1.0.0'"),
        ("kindless.yaml", "cdiVersion: 0.3.0\nkind: gpu\ndevices: [{name: x}]\n", "kind 'gpu' is not vendor/class"),
        ("env.yaml", "cdiVersion: 0.3.0\nkind: a.b/c\ndevices: [{name: x, containerEdits: {env: [1]}}]\n", "env"),
        ("itself.yaml", "cdiVersion: 0.3.0\nkind: a.b/c\ndevices: &d [{name: x, containerEdits: *d}]\n", "itself"),
        ("deep.json", "[" * 100_000, "nested"),
    ],
)
def test_malformed_spec_file_is_named_when_a_device_is_missing(roots, name, content, reason):
    (roots[1] / "cdi-spec-claim.yaml").rename(roots[1] / name)
    (roots[1] / name).write_text(content)
    with pytest.raises(CDIResolutionError) as caught:
        resolve([GPU0], roots)
    [(path, why)] = caught.value.malformed
    assert path == roots[1] / name and reason in why
    assert f"{roots[1] / name}: " in str(caught.value)


def test_later_root_overrides_earlier_and_other_files_are_ignored(roots, tmp_path):
    etc, run = roots
    override = (run / "cdi-spec-common.yaml").read_text().replace("KUBERNETES_NODE_NAME=lab-node", "FROM_ETC=1")
    (etc / "common.yaml").write_text(override)
    (run / "notes.txt").write_text("not a spec")
    [device] = resolve([COMMON], [etc, run, tmp_path / "absent"])
    assert device.spec_file == run / "cdi-spec-common.yaml"
    [device] = resolve([COMMON], [run, etc])
    assert device.spec_file == etc / "common.yaml" and "FROM_ETC=1" in device.edits.env
