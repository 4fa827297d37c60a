"""``kubelet-dra run --record FILE`` writes what happened on a live node as a scenario that replays green."""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import KubeletDRAProcess, eventually

from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.workbench.scenarios.carryover import carry_all
from kubelet_dra.workbench.scenarios.loader import load
from kubelet_dra.workbench.scenarios.replayer import replay
from kubelet_dra.workbench.scenarios.replayreport import failures
from kubelet_dra.workbench.scenarios.undertest import UnderTest
from kubelet_dra.workbench.testbed import manifests, objects
from kubelet_dra.workbench.testbed.forked import ENABLE as FORK_DRIVERS

GPU = "gpu.example.com"
NODE = "rec-node"
EXECD = {FORK_DRIVERS: ""}
"""The recording reads the driver's command line from /proc: a driver exec'd, as a user's is, shows its own."""


async def phase(kube: KubeClient, name: str) -> str | None:
    pod: dict[str, Any] | None = await objects.get(kube, "Pod", name)
    return None if pod is None else (pod.get("status") or {}).get("phase", "Pending")


ANOTHER_DRIVER = (
    "{python} -m kubelet_dra driver --driver-name gpu.acme.dev --node-name {node} --kubeconfig {kubeconfig}"
    " --registry-dir {registry_dir} --plugin-dir {plugin_dir} --cdi-root {cdi_root} --devices 2"
)
"""A driver of another name than the recorded one."""


async def test_a_recorded_node_replays_to_the_same_expectations(short_dir: Path):
    recorded = short_dir / "recorded.yaml"
    kubeconfig = short_dir / "kubeconfig"
    registry = short_dir / "registry"
    registry.mkdir()
    processes: list[KubeletDRAProcess] = []
    async with contextlib.AsyncExitStack() as stack:
        node = await KubeletDRAProcess.start(
            *("run", "--node-name", NODE, "--registry-dir", str(registry), "--kubeconfig-out", str(kubeconfig)),
            *(
                "--state-dir",
                str(short_dir / "state"),
                "--pod-back-off-period",
                "0.3",
                "--sync-frequency",
                "0.3",
                "--wiping-delay",
                "2",
            ),
            *("--record", str(recorded)),
        )
        processes.append(node)
        stack.push_async_callback(lambda: _stop_all(processes))
        await node.wait_line("Embedded API server ready")
        processes.append(await KubeletDRAProcess.start("controlplane", "--kubeconfig", str(kubeconfig)))
        driver = await KubeletDRAProcess.start(
            *("driver", "--driver-name", GPU, "--node-name", NODE, "--kubeconfig", str(kubeconfig)),
            *("--registry-dir", str(registry), "--plugin-dir", str(short_dir / "plugin"), "--cdi-root", str(short_dir)),
            *("--devices", "2"),
            env=EXECD,
        )
        processes.append(driver)
        await node.wait_line("Registered DRA plugin")
        kube = KubeClient.from_kubeconfig(str(kubeconfig))
        stack.callback(kube.close)
        for manifest in (
            manifests.device_class(GPU),
            manifests.claim_template("one-gpu", GPU),
            manifests.pod("p1", NODE, templates={"gpu": "one-gpu"}),
            manifests.pod("p2", NODE, templates={"gpu": "one-gpu"}),
        ):
            await objects.apply(kube, manifest)
        assert await eventually(lambda: _all_running(kube), timeout=20)
        await objects.delete(kube, "Pod", "p2")
        assert await eventually(lambda: _gone(kube, "p2"), timeout=20)
        assert await node.stop() == 0

    document = yaml.safe_load(recorded.read_text())
    (driver_entry,) = document["drivers"]
    assert driver_entry["name"] == GPU
    assert "--registry-dir {registry_dir}" in driver_entry["command"]
    assert "--plugin-dir {plugin_dir}" in driver_entry["command"]
    assert {o["kind"] for o in document["objects"]} == {"DeviceClass", "ResourceClaimTemplate"}
    expectations = [c for step in document["steps"] if "expect" in step for c in _listed(step["expect"])]
    assert {"calls": {"driver": "gpu", "method": "NodePrepareResources", "status": "OK", "count": 2}} in expectations
    assert {"calls": {"driver": "gpu", "method": "NodeUnprepareResources", "status": "OK", "count": 1}} in expectations

    result = await replay(load(recorded))
    assert result.passed, failures(result)
    assert len([step for step in result.results if step.kind == "expectation"]) == len(expectations)

    another = UnderTest("gpu", ANOTHER_DRIVER)  # a recording replays with any driver, as --driver gives it
    (carried,) = await carry_all([load(recorded)], [another])
    assert carried.scenario.driver("gpu").name == "gpu.acme.dev"
    result = await replay(carried.scenario)
    assert result.passed, failures(result)


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


async def _all_running(kube: KubeClient) -> bool:
    return [await phase(kube, "p1"), await phase(kube, "p2")] == ["Running", "Running"]


async def _gone(kube: KubeClient, name: str) -> bool:
    return await phase(kube, name) is None


async def _stop_all(processes: list[KubeletDRAProcess]) -> None:
    for process in reversed(processes):
        await process.stop()


async def test_a_driver_command_line_that_is_not_utf8_is_recorded_byte_for_byte(short_dir: Path):
    """A path of the driver's own with a byte that is not UTF-8 (a Latin-1 dir name): carried as is."""
    recorded, kubeconfig, registry = short_dir / "recorded.yaml", short_dir / "kubeconfig", short_dir / "registry"
    registry.mkdir()
    latin1 = Path(os.fsdecode(bytes(short_dir) + b"/kube\xe9config"))
    processes: list[KubeletDRAProcess] = []
    async with contextlib.AsyncExitStack() as stack:
        stack.push_async_callback(lambda: _stop_all(processes))
        node = await KubeletDRAProcess.start(
            *("-v", "2", "run", "--node-name", NODE, "--registry-dir", str(registry)),
            *("--kubeconfig-out", str(kubeconfig), "--state-dir", str(short_dir / "state"), "--record", str(recorded)),
        )
        processes.append(node)
        await node.wait_line("Embedded API server ready")
        assert not recorded.exists(), "nothing is written before the recording is whole"
        latin1.write_bytes(kubeconfig.read_bytes())
        processes.append(
            await KubeletDRAProcess.start(
                *("driver", "--driver-name", GPU, "--node-name", NODE, "--kubeconfig", str(latin1)),
                *("--registry-dir", str(registry), "--plugin-dir", str(short_dir / "plugin")),
                *("--cdi-root", str(short_dir)),
                env=EXECD,
            )
        )
        await node.wait_line('msg="Connection changed".* connected=True')  # what the recorder waits for
        assert await node.stop() == 0
    assert not any("Traceback" in line for line in node.lines), node.lines
    assert recorded.stat().st_mode & 0o777 == 0o600
    (driver_entry,) = yaml.safe_load(recorded.read_text())["drivers"]
    words = shlex.split(driver_entry["command"])
    assert os.fsencode(words[words.index("--kubeconfig") + 1]) == bytes(latin1)


@pytest.fixture
def full_disk(short_dir: Path) -> Iterator[Path]:
    """A small tmpfs of our own, filled to the last byte."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs takes root")
    mount = short_dir / "full"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k,mode=0700", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


async def test_a_recording_that_finds_the_disk_full_leaves_the_earlier_file_whole_and_says_so(
    short_dir: Path, full_disk: Path
):
    earlier = full_disk / "recorded.yaml"
    earlier.write_text("# an earlier recording\n")
    with contextlib.suppress(OSError), (full_disk / "filler").open("wb") as filler:
        while True:
            filler.write(b"\0" * 4096)
            filler.flush()
    run = await KubeletDRAProcess.start(
        *("run", "--node-name", NODE, "--registry-dir", str(short_dir / "registry")),
        *("--kubeconfig-out", str(short_dir / "kubeconfig"), "--record", str(earlier)),
    )
    try:
        await run.wait_line("Embedded API server ready")
    finally:
        code = await run.stop()
    assert code == 2, run.lines
    assert run.lines[-1] == (
        f"kubelet-dra: error: {earlier}: cannot write the scenario: No space left on device "
        "(fix: give --record a file of your own in a writable directory with free space)"
    )
    assert not any("Traceback" in line for line in run.lines), run.lines
    assert earlier.read_text() == "# an earlier recording\n"
    assert sorted(path.name for path in full_disk.iterdir()) == ["filler", "recorded.yaml"], "no temp file left"
