"""``kubelet-dra tap`` between the real kubelet 1.36.2 and a driver: a pod's whole DRA life is recorded.

A real control plane (scheduler, controller manager), the real kubelet under the machine-wide lock,
a driver registering in the tap's driver dir (our reference driver, then the Go example driver):
the kubelet registers the driver through the tap's mirrored socket, the real scheduler places a
pod with a template claim, the kubelet prepares it and the pod runs, the pod is deleted and
unprepared. The record file holds every call the kubelet made, with requests and answers; the
driver's going away makes the mirrored socket go, and the kubelet unregisters the driver.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import KubeletDRAProcess, eventually, kubelet_dra
from realk8s import (
    RealControlPlane,
    example_driver_cmd,
    real_kubelet,
    real_kubelet_missing,
    start_control_plane,
    stop_control_plane,
)

DRIVERS = {"reference": ("ref-node", "gpu.kubelet-dra.io"), "example": ("go-node", "gpu.example.com")}
"""Driver kind → (the node it runs on, its driver name): one node and one DeviceClass each."""
SIM_NODE = "sim-node"
"""The node ``kubelet-dra run`` is, beside the real kubelet's."""
REGISTRATION = "/pluginregistration.Registration/"
DRA_V1 = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/"
HEALTH_V1ALPHA1 = "/v1alpha1.DRAResourceHealth/NodeWatchResources"


@pytest.fixture(scope="module")
def cluster(interop_bin: Path) -> Iterator[RealControlPlane]:
    reason = real_kubelet_missing()
    if reason:
        pytest.skip(reason)
    directory = Path(tempfile.mkdtemp(prefix="kd-tap-", dir="/tmp"))
    nodes = (*(node for node, _ in DRIVERS.values()), SIM_NODE)
    plane = start_control_plane(directory, "scheduler", "controller-manager", nodes=nodes)
    try:
        yield plane
    finally:
        stop_control_plane(directory)
        shutil.rmtree(directory, ignore_errors=True)


def manifests(node: str, driver: str) -> list[dict[str, Any]]:
    """A DeviceClass of ``driver``, a template claiming one device of it, and a pod using the template; the
    pod names its node only by label, the real scheduler places it and allocates the device."""
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": driver},
            "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{driver}'"}}]},
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": f"{node}-gpu", "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": driver}}]}}},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"{node}-pod", "namespace": "default"},
            "spec": {
                "nodeSelector": {"kubernetes.io/hostname": node},
                "containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": f"{node}-gpu"}],
            },
        },
    ]


def driver_command(kind: str, plane: RealControlPlane, bin_dir: Path, dirs: dict[str, Path]) -> list[str]:
    node, driver = DRIVERS[kind]
    if kind == "reference":
        return [
            *(sys.executable, "-m", "kubelet_dra", "driver", "--driver-name", driver, "--node-name", node),
            *("--kubeconfig", str(plane.kubeconfig), "--registry-dir", str(dirs["drivers"])),
            *("--plugin-dir", str(dirs["plugins"] / driver), "--cdi-root", str(dirs["cdi"]), "--health"),
        ]
    values = {
        "node": node,
        "kubeconfig": plane.kubeconfig,
        "registry_dir": dirs["drivers"],
        "plugins_root": dirs["plugins"],
        "cdi_root": dirs["cdi"],
    }
    return example_driver_cmd(bin_dir, "gpu").format_map(values).split()


async def pod_lifecycle(cluster: RealControlPlane, node: str, driver: str, log: Callable[[], str]) -> None:
    """The pod of ``manifests`` is placed on ``node`` by the real scheduler, runs, is deleted and goes."""
    items = manifests(node, driver)
    cluster.kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))

    def pod() -> dict[str, Any] | None:
        return cluster.get("pod", f"{node}-pod", "-n", "default")

    running = await eventually(lambda: (pod() or {}).get("status", {}).get("phase") == "Running", timeout=90)
    assert running, json.dumps(pod(), indent=1)[-2000:] + "\n" + log()[-3000:]
    assert (pod() or {})["spec"]["nodeName"] == node
    cluster.kubectl("delete", "pod", f"{node}-pod", "-n", "default", "--wait=false")
    assert await eventually(lambda: pod() is None, timeout=90), log()[-3000:]


def kubelet_said(log: str, message: str, driver: str, endpoint_dir: str) -> bool:
    """Whether the real kubelet logged ``message`` about ``driver`` at an endpoint in ``endpoint_dir`` (-v 4)."""
    return any(
        f'"{message}"' in line and f'driverName="{driver}"' in line and f'endpoint="{endpoint_dir}/' in line
        for line in log.splitlines()
    )


def plugin_lines(log: str) -> str:
    """The kubelet's log lines about plugins (registration, unregistration)."""
    return "\n".join(line for line in log.splitlines() if "plugin" in line.lower())


def calls(path: Path, method: str) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [record for record in map(json.loads, path.read_text().splitlines()) if record["method"].endswith(method)]


@pytest.mark.parametrize("kind", ["reference", "example"])
async def test_the_real_kubelet_s_calls_to_a_driver_are_recorded_through_the_tap(
    cluster: RealControlPlane, interop_bin: Path, short_dir: Path, kind: str
) -> None:
    node, driver = DRIVERS[kind]
    dirs = {name: short_dir / name for name in ("drivers", "plugins", "cdi", "tap")}
    for directory in dirs.values():
        directory.mkdir()
    record = short_dir / "calls.jsonl"
    driver_log = (short_dir / "driver.log").open("w")
    with real_kubelet(cluster, node) as kubelet:
        tap = await KubeletDRAProcess.start(
            *("-v", "2", "tap", "--driver-registry-dir", str(dirs["drivers"])),
            *("--registry-dir", str(kubelet.registry_dir), "--socket-dir", str(dirs["tap"])),
            *("--record-calls", str(record)),
        )
        driver_process = subprocess.Popen(
            driver_command(kind, cluster, interop_bin, dirs), stdout=driver_log, stderr=subprocess.STDOUT
        )
        try:
            await tap.wait_line("Mirrored registration socket", timeout=60)
            tap_dir = str(dirs["tap"])
            registered = await eventually(
                lambda: kubelet_said(kubelet.log(), "Registered DRA plugin", driver, tap_dir), timeout=30
            )
            assert registered, plugin_lines(kubelet.log()) + "\n".join(tap.lines[-20:])
            await pod_lifecycle(cluster, node, driver, kubelet.log)

            driver_process.terminate()
            driver_process.wait(timeout=30)
            mirrored = list(kubelet.registry_dir.glob("*.sock"))
            assert await eventually(lambda: not list(kubelet.registry_dir.glob("*.sock")), timeout=10), mirrored
            unregistered = await eventually(
                lambda: kubelet_said(kubelet.log(), "Unregistered DRA plugin", driver, tap_dir), timeout=10
            )
            assert unregistered, plugin_lines(kubelet.log())[-3000:]
        finally:
            if driver_process.poll() is None:
                driver_process.terminate()
                driver_process.wait(timeout=30)
            driver_log.close()
            assert await tap.stop() == 0, "\n".join(tap.lines[-30:])
    (info,) = calls(record, REGISTRATION + "GetInfo")
    assert info["status"] == "OK" and info["response"]["name"] == driver
    (notify,) = calls(record, REGISTRATION + "NotifyRegistrationStatus")
    assert notify["request"] == {"plugin_registered": True, "error": ""} and notify["status"] == "OK"
    (prepare,) = calls(record, DRA_V1 + "NodePrepareResources")
    (claim,) = prepare["request"]["claims"]
    assert prepare["status"] == "OK" and prepare["driver"] == driver
    assert prepare["response"]["claims"][claim["uid"]]["devices"][0]["pool_name"] == node
    (unprepare,) = calls(record, DRA_V1 + "NodeUnprepareResources")
    assert unprepare["request"]["claims"] == [claim] and unprepare["response"] == {
        "claims": {claim["uid"]: {"error": ""}}
    }
    watches = calls(record, "/NodeWatchResources")
    assert watches, "the kubelet opened the health stream"


async def record_lifecycle(
    which: str, cluster: RealControlPlane, interop_bin: Path, root: Path, recording: Path
) -> None:
    """The pod's lifecycle with the Go example driver on the real kubelet through the tap (``real``) or on
    ``kubelet-dra run --kubelet-version 1.36`` (``run``), recorded to ``recording``."""
    node = DRIVERS["example"][0] if which == "real" else SIM_NODE
    dirs = {name: root / name for name in ("drivers", "plugins", "cdi", "tap", "state")}
    for directory in dirs.values():
        directory.mkdir(parents=True)
    values = {"node": node, "kubeconfig": cluster.kubeconfig, "registry_dir": dirs["drivers"]}
    values |= {"plugins_root": dirs["plugins"], "cdi_root": dirs["cdi"]}
    command = example_driver_cmd(interop_bin, "gpu").format_map(values).split()
    with contextlib.ExitStack() as stack:
        if which == "real":
            kubelet = stack.enter_context(real_kubelet(cluster, node))
            watcher = await KubeletDRAProcess.start(
                *("-v", "2", "tap", "--driver-registry-dir", str(dirs["drivers"])),
                *("--registry-dir", str(kubelet.registry_dir), "--socket-dir", str(dirs["tap"])),
                *("--record-calls", str(recording)),
            )
            await watcher.wait_line("Tap started", timeout=60)
            log = kubelet.log
        else:
            watcher = await KubeletDRAProcess.start(
                *("-v", "2", "run", "--node-name", node, "--kubeconfig", str(cluster.node_kubeconfig(node))),
                *("--registry-dir", str(dirs["drivers"]), "--state-dir", str(dirs["state"])),
                *("--kubelet-version", "1.36", "--record-calls", str(recording)),
            )
            await watcher.wait_line("Plugin Watcher Start", timeout=60)

            def log() -> str:
                return "\n".join(watcher.lines)

        driver_log = stack.enter_context((root / "driver.log").open("w"))
        process = subprocess.Popen(command, stdout=driver_log, stderr=subprocess.STDOUT)
        try:
            assert await eventually(lambda: calls(recording, "NotifyRegistrationStatus"), timeout=60), log()[-3000:]
            await pod_lifecycle(cluster, node, DRIVERS["example"][1], log)
        finally:
            process.terminate()
            process.wait(timeout=30)
            code = await watcher.stop()
        assert code == 0, "\n".join(watcher.lines[-30:])


async def test_a_tap_of_the_real_kubelet_beside_a_run_recording_of_the_same_pod_lifecycle(
    cluster: RealControlPlane, interop_bin: Path, short_dir: Path
) -> None:
    """The Go example driver, the same pod on the real kubelet (through the tap) and on ``kubelet-dra run
    --kubelet-version 1.36`` (its own --record-calls): the diff of the two recordings."""
    for which in ("real", "run"):
        await record_lifecycle(which, cluster, interop_bin, short_dir / which, short_dir / f"{which}.jsonl")
    real, run = str(short_dir / "real.jsonl"), str(short_dir / "run.jsonl")
    code, out, err = await kubelet_dra("--output", "json", "calls", "diff", real, run)
    assert code in (0, 1) and err == "", err
    report = json.loads(out)

    def without_health(lines: list[str]) -> list[str]:
        return [line for line in lines if not line.startswith("DRAResourceHealth/NodeWatchResources")]

    # The health watch is retried every 5 s by both: how many fall in the lifecycle is timing, the rest must match.
    assert without_health(report["a_calls"]) == without_health(report["b_calls"])
    for calls_of_one in (report["a_calls"], report["b_calls"]):
        assert any(line.startswith("DRAResourceHealth/NodeWatchResources UNIMPLEMENTED") for line in calls_of_one)
    assert len(without_health(report["a_calls"])) == 4, "GetInfo, NotifyRegistrationStatus, prepare, unprepare"
