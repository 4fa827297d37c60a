"""``kubelet-dra debug`` beside the real kubelet 1.36.2 while the reference driver fails registration in every way
its knobs allow: each diagnosis names the failure and quotes a line the real kubelet logs for it.

One control plane, one real kubelet session (under the machine-wide lock), every faulty driver started at once
under its own name, one debug run of 14 s (a stale socket's dial gives up after the kubelet's 10 s).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from realk8s import REPO, RealControlPlane, real_kubelet, real_kubelet_missing, start_control_plane, stop_control_plane

NODE = "debug-node"
CASES: dict[str, tuple[tuple[str, ...], str, str]] = {
    # driver name prefix: (knobs, failure mode, the part of our quoted line the real kubelet's log must hold)
    "getinfo-error": (("--fault-getinfo-error", "boom"), "F3", ""),
    "getinfo-delay": (("--fault-getinfo-delay", "3"), "F3", ", err: rpc error: code = DeadlineExceeded desc = "),
    "getinfo-csi": (("--fault-getinfo-type", "CSIPlugin"), "F4", ""),
    "getinfo-other": (("--fault-getinfo-type", "NotAPlugin"), "F4", ""),
    "versions-none": (("--fault-versions", "none"), "F5", ""),
    "versions-legacy": (("--fault-versions", "1.0.0"), "F6", ""),
    "versions-alpha": (("--fault-versions", "v1alpha4"), "F6", ""),
    "notify-error": (("--fault-notify-error", "nope"), "F9", ""),
    "no-endpoint": (("--fault-getinfo-endpoint", "/tmp/kd-no-such-dir/dra.sock"), "F10", ""),
    "rel-endpoint": (("--fault-getinfo-endpoint", "dra.sock"), "F10", ""),  # accepted, dialled from the cwd
    "stale": ((), "F2", ""),
}


@pytest.fixture
def plane(interop_bin: Path) -> Iterator[RealControlPlane]:
    if reason := real_kubelet_missing():
        pytest.skip(reason)
    directory = Path(tempfile.mkdtemp(prefix="kd-dbg-", dir="/tmp"))
    try:
        yield start_control_plane(directory, nodes=(NODE,))
    finally:
        stop_control_plane(directory)
        shutil.rmtree(directory, ignore_errors=True)


def kubelet_dra(*args: str, cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "kubelet_dra", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
    )


def test_each_registration_failure_is_diagnosed_as_the_real_kubelet_logs_it(plane: RealControlPlane) -> None:
    kubeconfig = str(plane.node_kubeconfig(NODE))
    with real_kubelet(plane, NODE) as kubelet:
        common = ("--kubeconfig", kubeconfig, "--registry-dir", str(kubelet.registry_dir), "--node-name", NODE)
        debug = kubelet_dra("debug", *common, "--for", "14", "--output", "json", cwd=kubelet.dir)
        drivers = [
            kubelet_dra(
                "driver",
                *common,
                "--driver-name",
                f"{name}.example.com",
                "--plugin-dir",
                str(kubelet.plugins_dir / f"{name}.example.com"),
                "--cdi-root",
                str(kubelet.dir / "cdi"),
                *knobs,
                cwd=kubelet.dir,
            )
            for name, (knobs, _, _) in CASES.items()
            if name != "stale"
        ]
        stale = socket.socket(socket.AF_UNIX)  # bound, never listening: what a crashed driver leaves behind
        stale.bind(str(kubelet.registry_dir / "stale.example.com-reg.sock"))
        stale.close()
        try:
            out, err = debug.communicate(timeout=90)
        finally:
            for driver in drivers:
                driver.terminate()
            for driver in drivers:
                driver.communicate(timeout=30)
        log = kubelet.log()
    assert debug.returncode == 1, err
    problems = json.loads(out)["problems"]
    for name, (_, mode, quoted_part) in CASES.items():
        # F12 (its slices name a driver nobody registered) is true of every one of them and not what is checked
        (problem,) = [p for p in problems if name in p["subject"] and p["mode"] != "F12"]
        assert problem["mode"] == mode, (name, problem)
        quoted = problem["message"]
        if quoted_part:  # the rest of the line is the driver's gRPC library's wording, which differs by library
            quoted = quoted[: quoted.index(quoted_part) + len(quoted_part)]
        assert quoted and quoted in log, (name, quoted)
