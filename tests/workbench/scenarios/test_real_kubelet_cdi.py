"""The ``cdi`` expectation on the real kubelet reads what the runtime received: the pairing of the kubelet's
sandbox line with the fake CRI's CreateContainer lines, on logs recorded from kubelet 1.36.2 (a pod with two
template claims and two containers; the replays themselves are in tests/interop/test_replay_real_kubelet.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

from kubelet_dra.workbench.realnode import realcdi as cdi

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "kubelet-1.36" / "cdi"
SANDBOX = "p1_default_29ee57da-4722-4e95-a3f8-086bcd72fb10_0"
COMMON = "k8s.gpu.example.com/device=common"
BOTH_CLAIMS = [
    COMMON,
    "k8s.gpu.example.com/device=eebe1e30-ce02-4bf5-8014-e5a78e3e839a-device-0",
    COMMON,
    "k8s.gpu.example.com/device=a117a1d3-74bf-4570-983f-1257d4e2b95e-device-1",
]


def test_the_pods_sandbox_is_the_one_the_kubelet_named():
    assert cdi.pod_sandbox(FIXTURES / "kubelet.log", "default", "p1") == SANDBOX
    assert cdi.pod_sandbox(FIXTURES / "kubelet.log", "other", "p1") is None
    assert cdi.pod_sandbox(FIXTURES / "missing.log", "default", "p1") is None


def test_each_container_has_the_devices_of_its_creation_duplicates_and_order_kept():
    runtime = FIXTURES / "fake-cri.log"
    assert cdi.container_devices(runtime, SANDBOX, "main") == BOTH_CLAIMS
    assert cdi.container_devices(runtime, SANDBOX, "sidecar") == BOTH_CLAIMS
    assert cdi.container_devices(runtime, SANDBOX, "init") is None
    assert cdi.container_devices(runtime, "p2_default_x_0", "main") is None


def test_a_container_created_again_counts_with_its_last_creation(tmp_path: Path):
    runtime = tmp_path / "fake-cri.log"
    shutil.copy(FIXTURES / "fake-cri.log", runtime)
    recorded = (FIXTURES / "fake-cri.log").read_text().splitlines()
    main = next(line for line in recorded if " CreateContainer " in line and "container=main" in line)
    with runtime.open("a") as log:
        log.write(main.replace(f"cdi=[{' '.join(BOTH_CLAIMS)}]", f"cdi=[{COMMON}]") + "\n")
        log.write(main.replace("err=<nil>", 'err=rpc error: code = Unknown desc = "refused"') + "\n")
    assert cdi.container_devices(runtime, SANDBOX, "main") == [COMMON], "the failed creation does not count"
