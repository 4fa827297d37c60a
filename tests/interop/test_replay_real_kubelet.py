"""Library scenarios replayed with the node played by the real kubelet 1.36.2 (``replay --real-kubelet``).

The replay runs as a subprocess while the test holds the machine-wide real-kubelet lock (the
product itself only refuses to start beside a kubelet that serves the device-plugin socket). The
scenarios left out of ``SCENARIOS``, and why, are listed in docs/replay.md, "On the real kubelet".
"""

from __future__ import annotations

import json
import shutil
import socket
import tempfile
from pathlib import Path

from helpers import kubelet_dra
from realk8s import REPO, RealControlPlane, start_control_plane, stop_control_plane

SCENARIOS = (
    "apiserver-restart",
    "cdi-two-claims-two-containers",
    "health-healthy-unhealthy-healthy",
    "kubelet-crash-during-prepare",
    "kubelet-restart-during-prepare",
    "pod-lifecycle",
    "register-after-getinfo-failure",
    "register-after-plugin-restart",
    "service-reconnect",
    "slices-wiped-at-kubelet-start",
)
"""Left out for CI time, held in the runs docs/fidelity.md records: the files that wait out the real 30 s wiping
delay (rolling-update-two-instances, slices-kept-when-plugin-restarts-in-time, slices-wiped-after-plugin-stops)
and driver-v1-only / driver-v1beta1-only (pod-lifecycle's path on one service)."""
DEVICE_PLUGIN_SOCKET = Path("/var/lib/kubelet/device-plugins/kubelet.sock")


def _broken_steps(out: str) -> str:
    """The steps that did not pass in a ``--output json`` report, each named with its message before its details
    (its tail when it is not one): what a failure shows, in full."""
    try:
        report = json.loads(out)
    except ValueError:
        return out[-3000:]
    lines = [
        f"{scenario['name']}: {step.get('name')} {step['result']}: {step.get('message')}\n{step.get('details', '')}"
        for scenario in report["scenarios"]
        for step in scenario["steps"]
        if step["result"] not in ("passed", "skipped")
    ]
    return "\n".join(lines or [f"{scenario['name']}: {scenario['error']}" for scenario in report["scenarios"]])


def _plane_story(plane: RealControlPlane) -> str:
    """What the control plane says of a pod that did not run: its events, and the scheduler's and the controller
    manager's last lines."""
    events = plane.kubectl("get", "events", "-A", "--sort-by=.lastTimestamp", check=False).stdout
    logs = [
        f"--- {name} (last lines)\n" + "\n".join((plane.dir / name).read_text(errors="replace").splitlines()[-25:])
        for name in ("scheduler.log", "controller-manager.log")
        if (plane.dir / name).exists()
    ]
    return "\n".join([f"--- events\n{events}", *logs])


def _flags(bin_dir: Path) -> list[str]:
    return [
        "--real-kubelet",
        str(bin_dir / "kubelet"),
        "--cri-cmd",
        f"{bin_dir}/fake-cri -listen unix://{{cri_socket}}",
    ]


async def test_library_scenarios_hold_on_the_real_kubelet(turn: Path):
    files = [str(REPO / "scenarios" / f"{name}.yaml") for name in SCENARIOS]
    code, out, err = await kubelet_dra("replay", *_flags(turn), "--output", "json", "--keep", *files, timeout=900)
    report = json.loads(out)
    logs = {}
    for scenario in report["scenarios"]:
        workdir = Path(scenario["workdir"])
        logs[scenario["name"]] = (workdir / "kubelet" / "kubelet.log").read_text(errors="replace")
        shutil.rmtree(workdir, ignore_errors=True)
    kubelet_log = "".join(logs.values())
    broken = {
        scenario["name"]: scenario["error"]
        or [step["message"] for step in scenario["steps"] if step["result"] != "passed"]
        for scenario in report["scenarios"]
        if not scenario["passed"]
    }
    assert code == 0, (broken, err[-2000:])
    assert [scenario["name"] for scenario in report["scenarios"]] == list(SCENARIOS)
    # the node was the real kubelet: its own words for the driver's registration through the tap
    assert '"Registered DRA plugin"' in kubelet_log and 'driverName="gpu.example.com"' in kubelet_log
    # "registered again" meant the kubelet's new registration, not its word to the driver before the restart:
    # the pod created next never met an unregistered driver (which costs it the 60-90 s pod resync)
    assert "DRA driver gpu.example.com is not registered" not in logs["register-after-plugin-restart"]
    for scenario in report["scenarios"]:
        assert scenario["note"].startswith("real kubelet timings: wipingDelay 30 s"), scenario["note"]
    # cdi: the devices the runtime received in the kubelet's CreateContainer, the common one once per claim
    steps = {step["name"]: step["message"] for scenario in report["scenarios"] for step in scenario["steps"]}
    assert steps["main has both claims' devices"].startswith("4: k8s.gpu.example.com/device=common, ")
    assert steps["main has both claims' devices"].count("device=common") == 2
    assert steps["step 5: stopNode crash=true"] == "crashed"
    # wipes: the kubelet's own timers in its log, armed when the killed driver's connection broke, cancelled when
    # the driver came back; kubelet-dra's diagnosis is skipped, saying why
    results = {step["name"]: step["result"] for scenario in report["scenarios"] for step in scenario["steps"]}
    assert (results["wipe scheduled"], results["wipe cancelled"]) == ("passed", "passed")
    assert results["GetInfo failure diagnosed as F3"] == "skipped"
    assert results["registered once GetInfo answers"] == "passed", "a skipped expectation does not end the replay"
    assert "the real kubelet has not" in steps["GetInfo failure diagnosed as F3"]


async def test_a_kubelet_already_serving_the_device_plugin_socket_is_refused(turn: Path, tmp_path: Path):
    """Under the lock no real kubelet runs, so a listener of the test's own stands for one."""
    if DEVICE_PLUGIN_SOCKET.exists():
        DEVICE_PLUGIN_SOCKET.unlink()  # a stale one: no kubelet runs while the lock is held
    DEVICE_PLUGIN_SOCKET.parent.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind(str(DEVICE_PLUGIN_SOCKET))
        listener.listen()
        try:
            code, _, err = await kubelet_dra(
                "replay", *_flags(turn), str(REPO / "scenarios" / "apiserver-restart.yaml")
            )
        finally:
            DEVICE_PLUGIN_SOCKET.unlink()
    assert code == 2 and "Traceback" not in err
    assert f"another kubelet already serves {DEVICE_PLUGIN_SOCKET}" in err


async def test_on_a_real_control_plane_each_scenario_leaves_it_as_it_found_it(turn: Path):
    """``--kubeconfig``: the real kubelet on a real kube-apiserver, scheduler and controller-manager; the same
    file twice, and the second replay's node must not meet the first one's pod."""
    directory = Path(tempfile.mkdtemp(prefix="kd-cp-", dir="/tmp"))
    plane = start_control_plane(directory, "scheduler", "controller-manager")
    try:
        scenario = str(REPO / "scenarios" / "unprepare-fails-then-succeeds.yaml")
        flags = [*_flags(turn), "--kubeconfig", str(plane.kubeconfig), "--output", "json"]
        code, out, err = await kubelet_dra("replay", *flags, scenario, scenario, timeout=600)
        assert code == 0, f"{_broken_steps(out)}\n{err[-2000:]}\n{_plane_story(plane)}"
        uids = [json.loads(out)["scenarios"][index]["steps"][0]["message"].split(" uid ")[1] for index in (0, 1)]
        assert uids[0].split(";")[0] != uids[1].split(";")[0]
        left = plane.kubectl("get", "pods,resourceclaims,resourceclaimtemplates", "-A", "-o", "name").stdout
        assert left.strip() == ""
    finally:
        stop_control_plane(directory)
        shutil.rmtree(directory, ignore_errors=True)
