"""``debug`` and ``run`` beside a live node do it no harm: the real kubelet 1.36.2 with a real driver (the Go example
driver) that has a prepared claim in the kubelet's checkpoint.

``debug`` is pointed at the kubelet's registry dir and registers the driver itself, as a node engineer runs it;
``run`` is pointed at the same dirs, once with the state dir it would take by default (the kubelet's root dir) and
once naming it, and refuses with one line each time. Afterwards the kubelet's checkpoint has the same bytes, the
kubelet unregistered nothing and registered nothing again, the driver's sockets are the same files and still
listening, the node's ResourceSlices are the same, and the pod still runs.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import attrs
import pytest
from helpers import eventually
from realk8s import (
    REPO,
    RealControlPlane,
    RealKubelet,
    embedded_control_plane,
    example_driver_cmd,
    gpu_pod_manifests,
    real_kubelet,
    real_kubelet_missing,
)

from kubelet_dra.workbench.testbed import command_words, placeholder_values

NODE = "live-node"
DRIVER = "gpu.example.com"
REGISTERED = "Registered DRA plugin"
UNREGISTERED = ("Unregistered DRA plugin", "DeRegisterPlugin")


@attrs.frozen
class NodeState:
    """What a tool beside the node must leave as it was."""

    checkpoint: bytes
    sockets: dict[str, int]
    """Every socket under the registry and plugins dirs → its inode."""
    listening: dict[str, bool]
    slices: list[str]
    registrations: int
    """Lines of the kubelet's log that say it registered a DRA plugin."""


def sockets_under(*dirs: Path) -> dict[str, int]:
    found = {}
    for directory in dirs:
        for path in directory.rglob("*"):
            info = path.lstat()
            if stat.S_ISSOCK(info.st_mode):
                found[str(path)] = info.st_ino
    return found


def listening(path: str) -> bool:
    with socket.socket(socket.AF_UNIX) as client:
        try:
            client.connect(path)
        except OSError:
            return False
    return True


def node_state(plane: RealControlPlane, kubelet: RealKubelet) -> NodeState:
    sockets = sockets_under(kubelet.registry_dir, kubelet.plugins_dir)
    slices = (plane.get("resourceslices") or {}).get("items", [])
    return NodeState(
        checkpoint=kubelet.checkpoint.read_bytes(),
        sockets=sockets,
        listening={path: listening(path) for path in sockets},
        slices=sorted(item["metadata"]["name"] for item in slices if item["spec"].get("nodeName") == NODE),
        registrations=kubelet.log().count(REGISTERED),
    )


def kubelet_dra(*args: str, cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubelet_dra", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        check=False,
    )


def pod_phase(plane: RealControlPlane) -> str:
    return str(((plane.get("pod", "gpu-pod", "-n", "default") or {}).get("status") or {}).get("phase", ""))


def reserved_claim(plane: RealControlPlane) -> str:
    for claim in (plane.get("resourceclaims", "-n", "default") or {}).get("items", []):
        if claim.get("status", {}).get("allocation") and claim["status"].get("reservedFor"):
            return str(claim["metadata"]["name"])
    return ""


@pytest.fixture
def plane(interop_bin: Path) -> Iterator[RealControlPlane]:
    """The embedded API server and the offline control plane, which allocates the pod's claim."""
    if reason := real_kubelet_missing():
        pytest.skip(reason)
    directory = Path(tempfile.mkdtemp(prefix="kd-live-", dir="/tmp"))
    try:
        with embedded_control_plane(directory) as plane:
            yield plane
    finally:
        shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
async def live_node(plane: RealControlPlane, interop_bin: Path) -> AsyncIterator[RealKubelet]:
    """The real kubelet with the Go example driver registered and a pod whose claim it prepared."""
    with real_kubelet(plane, NODE) as kubelet:
        values = placeholder_values(
            node=NODE,
            kubeconfig=plane.kubeconfig,
            registry_dir=kubelet.registry_dir,
            plugin_dir=kubelet.plugins_dir / DRIVER,
            plugins_root=kubelet.plugins_dir,
            cdi_root=kubelet.dir / "cdi",
            driver=DRIVER,
        )
        argv = command_words(example_driver_cmd(interop_bin, "gpu"), values, where="driver")
        with (kubelet.dir / "driver.log").open("w") as log:
            driver = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
        try:
            registered = await eventually(
                lambda: any(REGISTERED in line and DRIVER in line for line in kubelet.log().splitlines()), timeout=60
            )
            assert registered, (kubelet.dir / "driver.log").read_text()[-3000:]
            for manifest in gpu_pod_manifests(DRIVER, NODE):
                plane.kubectl("apply", "-f", "-", stdin=json.dumps(manifest))
            claim = await eventually(lambda: reserved_claim(plane), timeout=60, interval=0.5)
            assert claim, "the offline control plane allocated and reserved the pod's claim"
            # the pod reached the kubelet before its claim existed: an update makes it sync at once
            plane.kubectl("label", "pod", "gpu-pod", "-n", "default", "example.com/claim=reserved")
            assert await eventually(lambda: pod_phase(plane) == "Running", timeout=60, interval=0.5), kubelet.log()[
                -3000:
            ]
            assert claim in kubelet.checkpoint.read_text(), "the real kubelet checkpointed the prepared claim"
            yield kubelet
        finally:
            driver.terminate()
            driver.wait(timeout=30)


async def test_debug_and_run_beside_the_real_kubelet_leave_its_checkpoint_drivers_and_sockets_as_they_were(
    plane: RealControlPlane, live_node: RealKubelet
) -> None:
    kubelet = live_node
    before = node_state(plane, kubelet)
    assert before.sockets and all(before.listening.values()), before
    assert before.slices, "the driver published its ResourceSlices"

    debug = kubelet_dra(
        *("debug", "--registry-dir", str(kubelet.registry_dir), "--node-name", NODE),
        *("--kubeconfig", str(plane.kubeconfig), "--for", "8", "--output", "json"),
        cwd=kubelet.dir,
        timeout=120,
    )
    assert "Traceback" not in debug.stderr
    report = json.loads(debug.stdout)
    assert DRIVER in json.dumps(report), "debug registered the driver beside the kubelet"

    runs = {
        "--registry-dir": ("--registry-dir", str(kubelet.registry_dir)),
        "--state-dir": ("--registry-dir", str(kubelet.registry_dir), "--state-dir", str(kubelet.root_dir)),
    }
    for where, flags in runs.items():
        run = kubelet_dra(
            *("run", "--node-name", NODE, *flags),
            *("--kubeconfig", str(plane.kubeconfig)),
            cwd=kubelet.dir,
            timeout=60,
        )
        assert run.returncode == 2, run.stderr
        assert run.stderr.strip().splitlines() == [
            f"kubelet-dra: error: {where}: {kubelet.checkpoint} was not written by kubelet-dra"
            " (no kubelet-dra-state beside it): it is never adopted"
            " (fix: pass an explicit --state-dir of kubelet-dra's own (a new or empty dir))"
        ]

    after = node_state(plane, kubelet)
    assert after == before
    log = kubelet.log()
    assert not [line for line in log.splitlines() if any(mark in line for mark in UNREGISTERED)]
    assert pod_phase(plane) == "Running"
    assert sorted(path.name for path in kubelet.root_dir.iterdir() if path.name.startswith("kubelet-dra")) == []
