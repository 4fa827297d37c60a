"""The same pod lifecycles on the real kubelet 1.36.2 and on ``kubelet-dra run``, as nodes of one real control plane
(kube-apiserver, kube-scheduler and kube-controller-manager 1.36.2), compared as normalized status histories
(``kubelet_dra.workbench.fidelity.history``): what a user or a controller sees of a pod must be the same on both.

Lifecycles: a pod with a claim from a template on the Go example driver runs and is deleted; a pod whose prepare fails
(the reference driver's ``prepare-error`` knob) gets the Warning Event and is deleted while Pending; a pod is deleted
while its driver is down (its unprepare fails until the driver is back). The real kubelet runs under the machine-wide
lock, then ``kubelet-dra run`` with the real kubelet's own periods (10 s back-off, 60 s resync).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from realk8s import (
    REPO,
    RealControlPlane,
    example_driver_cmd,
    real_kubelet,
    real_kubelet_missing,
    start_control_plane,
    stop_control_plane,
)

from kubelet_dra.workbench.fidelity.history import from_the_kubelet, history

REAL, SIM = "node-real", "node-sim"
GPU, REF = "gpu.example.com", "ref.example.com"
LIFECYCLES = ("runs-then-deleted", "prepare-fails-then-deleted", "driver-down-at-deletion")
FAILED_PREPARE = "FailedPrepareDynamicResources"
FIRST_SYNC = 150
"""Seconds a new pod may take to run or to fail at its driver: the kubelet may see it bound before the API server's
node authorizer has linked it to the node ("… is forbidden: no relationship found between node …"), and both
kubelets retry that failed prepare only 60-90 s later."""
NO_POWER = "no power"


def wait(check: Callable[[], Any], timeout: float, what: str, describe: Callable[[], str] = str) -> Any:
    deadline = time.monotonic() + timeout
    while not (value := check()):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting until {what}\n{describe()}")
        time.sleep(0.1)
    return value


class PodWatch:
    """Every pod object of the default namespace, in watch order, as ``kubectl get pods -w`` sees them."""

    def __init__(self, plane: RealControlPlane) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        command = ["kubectl", "--kubeconfig", str(plane.kubeconfig), "get", "pods", "-w", "-o", "json"]
        self._proc = subprocess.Popen([*command, "--output-watch-events"], stdout=subprocess.PIPE, text=True)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        decoder, buffer = json.JSONDecoder(), ""
        for line in self._proc.stdout:
            buffer += line
            try:
                event, _ = decoder.raw_decode(buffer.strip())
            except ValueError:
                continue
            self.events.append((event["type"], event["object"]))
            buffer = ""

    def history(self, name: str) -> list[str]:
        return history(
            None if kind == "DELETED" else pod for kind, pod in self.events if pod["metadata"]["name"] == name
        )

    def close(self) -> None:
        self._proc.terminate()
        self._proc.wait(timeout=10)


@attrs.define
class NodeRun:
    """One node's drivers and what its lifecycles showed."""

    plane: RealControlPlane
    node: str
    registry: Path
    plugins: Path
    work: Path
    log: Callable[[], str]
    histories: dict[str, list[str]] = attrs.field(factory=dict)
    events: dict[str, list[str]] = attrs.field(factory=dict)
    deletion_seconds: float = 0.0
    _drivers: dict[str, subprocess.Popen[bytes]] = attrs.field(factory=dict)

    def start_drivers(self, interop_bin: Path) -> None:
        dirs = {"node": self.node, "kubeconfig": self.plane.kubeconfig, "registry_dir": self.registry}
        command = example_driver_cmd(interop_bin, "gpu").format(
            **dirs, plugins_root=self.plugins, cdi_root=self.work / "cdi-gpu"
        )
        self._spawn(GPU, command.split())
        self.start_reference_driver()
        for driver in (GPU, REF):
            wait(lambda driver=driver: self._registered(driver), 120, f"{driver} registered on {self.node}")
            # a pod created before its driver's slices waits for the scheduler's next try: up to minutes
            wait(lambda driver=driver: self._published(driver), 60, f"{driver}'s slices for {self.node}")

    def start_reference_driver(self) -> None:
        self._spawn(
            REF,
            [
                *(sys.executable, "-m", "kubelet_dra", "driver", "--driver-name", REF, "--node-name", self.node),
                *("--kubeconfig", str(self.plane.kubeconfig), "--registry-dir", str(self.registry)),
                *("--plugin-dir", str(self.plugins / REF), "--cdi-root", str(self.work / "cdi-ref")),
            ],
        )

    def _spawn(self, driver: str, command: list[str]) -> None:
        log = (self.work / f"{driver}.log").open("ab")
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self._drivers[driver] = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)

    def _registered(self, driver: str) -> bool:
        return any("Registered DRA plugin" in line and driver in line for line in self.log().splitlines())

    def _published(self, driver: str) -> bool:
        listed = self.plane.get("resourceslices") or {"items": []}
        return any(
            item["spec"]["driver"] == driver and item["spec"].get("nodeName") == self.node for item in listed["items"]
        )

    def stop_driver(self, driver: str) -> None:
        process = self._drivers.pop(driver)
        process.terminate()
        process.wait(timeout=30)

    def stop_drivers(self) -> None:
        for driver in list(self._drivers):
            self.stop_driver(driver)

    def fault(self, *args: str) -> None:
        subprocess.run(
            [sys.executable, "-m", "kubelet_dra", "driver", "fault", "--plugin-dir", str(self.plugins / REF), *args],
            check=True,
            capture_output=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )

    def phase(self, name: str) -> str:
        pod = self.plane.get("pod", name)
        return "Gone" if pod is None else (pod.get("status") or {}).get("phase", "")

    def waiting(self, name: str) -> bool:
        statuses = ((self.plane.get("pod", name) or {}).get("status") or {}).get("containerStatuses") or [{}]
        return "waiting" in (statuses[0].get("state") or {})

    def create(self, name: str, driver: str) -> None:
        template = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"spec": {"devices": {"requests": [{"name": "dev", "exactly": {"deviceClassName": driver}}]}}},
        }
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "nodeSelector": {"kubernetes.io/hostname": self.node},
                "containers": [{"name": "c", "image": "busybox", "resources": {"claims": [{"name": "dev"}]}}],
                "resourceClaims": [{"name": "dev", "resourceClaimTemplateName": name}],
            },
        }
        self.plane.kubectl(
            "apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": [template, pod]})
        )

    def kubelet_events(self, name: str) -> list[str]:
        """The node's Warning events about the reference driver's prepare error."""
        listed = self.plane.get("events", "--field-selector", f"involvedObject.name={name}") or {"items": []}
        return sorted(
            f"{event['type']} {event['reason']}"
            for event in listed["items"]
            if event["type"] == "Warning" and event["reason"] == FAILED_PREPARE and NO_POWER in event["message"]
        )

    def describe(self, name: str) -> str:
        """What a failed wait shows: the pod, claims, slices, events, the node's log lines naming the pod."""
        shown = [
            json.dumps((self.plane.get("pod", name) or {}).get("status"), indent=1),
            *(
                json.dumps([{"metadata": item["metadata"], "status": item.get("status")} for item in listed["items"]])
                for kind in ("resourceclaims", "resourceslices", "events")
                if (listed := self.plane.get(kind))
            ),
            *[line for line in self.log().splitlines() if name in line][-60:],
        ]
        return "\n".join(shown)

    def until(self, name: str, check: Callable[[], Any], timeout: float, what: str) -> None:
        wait(check, timeout, what, lambda: self.describe(name))

    def lifecycles(self, watch: PodWatch) -> None:
        # 1. runs, then deleted
        name = f"runs-{self.node}"
        self.create(name, GPU)
        self.until(name, lambda: self.phase(name) == "Running", FIRST_SYNC, f"{name} Running")
        started = time.monotonic()
        self.plane.kubectl("delete", "pod", name, "--wait=false")
        self.until(name, lambda: self.phase(name) == "Gone", 60, f"{name} gone")
        self.deletion_seconds = time.monotonic() - started
        # 2. prepare fails, then deleted while Pending
        name = f"fails-{self.node}"
        self.fault("set", f"prepare-error={NO_POWER}")
        self.create(name, REF)
        self.until(name, lambda: self.kubelet_events(name), FIRST_SYNC, f"{name}'s {FAILED_PREPARE} event")
        # the real kubelet's status manager may write the Pending status after the event: delete after both
        self.until(name, lambda: self.waiting(name), 30, f"{name} shown with its containers waiting")
        self.events[LIFECYCLES[1]] = self.kubelet_events(name)
        self.plane.kubectl("delete", "pod", name, "--wait=false")
        self.until(name, lambda: self.phase(name) == "Gone", 60, f"{name} gone")
        self.fault("clear")
        # 3. deleted while its driver is down
        name = f"down-{self.node}"
        self.create(name, REF)
        self.until(name, lambda: self.phase(name) == "Running", FIRST_SYNC, f"{name} Running")
        self.stop_driver(REF)
        self.plane.kubectl("delete", "pod", name, "--wait=false")
        time.sleep(5)
        assert self.phase(name) == "Running", "a pod whose unprepare fails stays, Running"
        self.start_reference_driver()
        self.until(name, lambda: self.phase(name) == "Gone", 60, f"{name} gone once its driver is back")
        time.sleep(1)
        for lifecycle, prefix in zip(LIFECYCLES, ("runs", "fails", "down"), strict=True):
            self.histories[lifecycle] = watch.history(f"{prefix}-{self.node}")


@pytest.fixture(scope="module")
def cluster(interop_bin: Path) -> Iterator[RealControlPlane]:
    if reason := real_kubelet_missing():
        pytest.skip(reason)
    directory = Path(tempfile.mkdtemp(prefix="kd-podstatus-", dir="/tmp"))
    plane = start_control_plane(directory, "scheduler", "controller-manager", nodes=(REAL, SIM))
    try:
        for driver in (GPU, REF):
            device_class = {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": driver},
                "spec": {"selectors": [{"cel": {"expression": f"device.driver == '{driver}'"}}]},
            }
            plane.kubectl("apply", "-f", "-", stdin=json.dumps(device_class))
        yield plane
    finally:
        stop_control_plane(directory)
        shutil.rmtree(directory, ignore_errors=True)


def run_real(plane: RealControlPlane, interop_bin: Path, watch: PodWatch) -> NodeRun:
    with real_kubelet(plane, REAL) as kubelet:
        run = NodeRun(plane, REAL, kubelet.registry_dir, kubelet.plugins_dir, kubelet.dir, kubelet.log)
        try:
            run.start_drivers(interop_bin)
            run.lifecycles(watch)
        finally:
            run.stop_drivers()
    return run


def run_simulated(plane: RealControlPlane, interop_bin: Path, watch: PodWatch, short_dir: Path) -> NodeRun:
    registry, plugins = short_dir / "registry", short_dir / "plugins"
    registry.mkdir()
    plugins.mkdir()
    log_path = plane.dir / "node-sim.log"
    with log_path.open("wb") as log:
        node = subprocess.Popen(
            [
                *(sys.executable, "-m", "kubelet_dra", "run", "--node-name", SIM, "--registry-dir", str(registry)),
                *("--kubeconfig", str(plane.node_kubeconfig(SIM)), "--state-dir", str(short_dir / "state")),
            ],
            stderr=log,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    run = NodeRun(plane, SIM, registry, plugins, plane.dir, lambda: log_path.read_text(errors="replace"))
    try:
        run.start_drivers(interop_bin)
        run.lifecycles(watch)
    finally:
        run.stop_drivers()
        node.terminate()
        assert node.wait(timeout=30) == 0
    return run


def test_pod_status_histories_match_the_real_kubelets(cluster: RealControlPlane, interop_bin: Path, short_dir: Path):
    watch = PodWatch(cluster)
    try:
        real = run_real(cluster, interop_bin, watch)
        simulated = run_simulated(cluster, interop_bin, watch, short_dir)
    finally:
        watch.close()
    report = json.dumps(
        {"real": attrs.asdict(real, filter=_shown), "sim": attrs.asdict(simulated, filter=_shown)}, indent=1
    )
    print(report)
    for lifecycle in LIFECYCLES:
        # from the node's first status write on: the scheduler's lines before it vary with its timing
        ours, theirs = (from_the_kubelet(run.histories[lifecycle]) for run in (simulated, real))
        assert ours == theirs, f"{lifecycle}:\n{report}"
    assert simulated.events == real.events == {LIFECYCLES[1]: [f"Warning {FAILED_PREPARE}"]}, report
    # the real kubelet took 0.85-1.9 s from delete to gone (finished at the PLEG relist after the containers stopped)
    assert 0.5 <= simulated.deletion_seconds <= 3.0, report


def _shown(attribute: attrs.Attribute, _value: object) -> bool:
    return attribute.name in ("histories", "events", "deletion_seconds")
