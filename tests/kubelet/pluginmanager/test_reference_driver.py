"""The bundled reference driver, run as its own process, against an in-process Node and `kubelet-dra run`."""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from helpers import KubeletDRAProcess as Process

from kubelet_dra.kubelet.kubelet import Node
from kubelet_dra.kubelet.pluginmanager import SocketPhase
from kubelet_dra.peers.kube.client import KubeClient

from .test_wiper import slice_names

GPU = "gpu.example.com"


@pytest.fixture
async def driver_process(tmp: Path, registry: Path, kubeconfig: str) -> AsyncIterator[Callable[..., object]]:
    """Start the reference driver for node-1 with extra flags; every driver is stopped at the end."""
    started: list[Process] = []

    async def start(*flags: str) -> Process:
        process = await Process.start(
            "driver",
            *("--driver-name", GPU, "--node-name", "node-1", "--kubeconfig", kubeconfig),
            *("--registry-dir", str(registry), "--plugin-dir", str(tmp / "plugin"), "--cdi-root", str(tmp / "cdi")),
            *flags,
        )
        started.append(process)
        await process.wait_line("driver started")
        return process

    yield start
    for process in started:
        await process.stop()


async def control(tmp: Path, *args: str) -> None:
    """``kubelet-dra driver fault --plugin-dir ... ARGS`` against the running driver."""
    process = await Process.start("driver", "fault", "--plugin-dir", str(tmp / "plugin"), *args)
    assert await process.wait() == 0, process.lines


def settled(node: Node, count: int) -> Callable[[], bool]:
    """``count`` instances of the driver, every socket registered."""
    return lambda: (
        len(node.instances(GPU)) == count
        and all(state.phase is SocketPhase.REGISTERED for state in node.registrations())
    )


async def test_registration_restart_and_service_choice(node_factory, driver_process, kubeconfig: str):
    async with node_factory(kubeconfig=kubeconfig) as node:
        driver = await driver_process("--fault-versions", "v1beta1")
        await node.wait_for(lambda: settled(node, 1)() and node.instances(GPU)[0].connected, timeout=20)
        assert list(node.chosen_services().values()) == ["v1beta1.DRAPlugin"]
        await driver.wait_line("registered with the kubelet")

        await driver.stop()
        await node.wait_for(settled(node, 0))
        await driver_process()
        await node.wait_for(lambda: settled(node, 1)() and node.instances(GPU)[0].connected, timeout=20)
        assert list(node.chosen_services().values()) == ["v1.DRAPlugin"]


async def test_get_info_failure_then_recovery(node_factory, driver_process, tmp: Path, clock):
    async with node_factory() as node:
        await driver_process("--fault-getinfo-error", "not today")
        socket = str(node.registration.registry_dir + f"/{GPU}-reg.sock")
        await node.wait_for(lambda: socket in node.diagnoses(), timeout=20)
        diagnosis = node.diagnoses()[socket]
        assert diagnosis.id == "F3"
        assert "failed to get plugin info using RPC GetInfo" in diagnosis.message and "not today" in diagnosis.message

        await control(tmp, "clear", "getinfo-error")
        await clock.advance(0.5)
        await node.wait_for(settled(node, 1), timeout=20)
        assert node.diagnoses() == {}


async def test_legacy_only_driver_needs_legacy_services(node_factory, driver_process):
    async with node_factory(legacy_services=True) as node:
        await driver_process("--fault-versions", "1.0.0")
        await node.wait_for(settled(node, 1), timeout=20)
        assert list(node.chosen_services().values()) == ["v1alpha3.NodeService"]


@contextlib.asynccontextmanager
async def run_with_a_driver(tmp: Path, registry: Path, *run_flags: str) -> AsyncIterator[tuple[Process, Process, str]]:
    """``kubelet-dra run`` as node-1 and the reference driver against its API server: ``(run, driver, kubeconfig)``
    once run logged the registration; the driver stopped and then run, which must exit 0 without a traceback."""
    kubeconfig = tmp / "run.kubeconfig"
    run = await Process.start(
        "run",
        *("--node-name", "node-1", "--registry-dir", str(registry), "--kubeconfig-out", str(kubeconfig)),
        *run_flags,
    )
    driver = None
    try:
        await run.wait_line("Plugin Watcher Start")
        driver = await Process.start(
            "driver",
            *("--driver-name", GPU, "--node-name", "node-1", "--kubeconfig", str(kubeconfig)),
            *("--registry-dir", str(registry), "--plugin-dir", str(tmp / "plugin"), "--cdi-root", str(tmp / "cdi")),
        )
        yield run, driver, str(kubeconfig)
    finally:
        if driver is not None:
            await driver.stop()
        code = await run.stop()
    assert code == 0
    assert not any("Traceback" in line for line in run.lines), run.lines


async def test_run_command_registers_wipes_and_stops_cleanly(tmp: Path, registry: Path):
    flags = ("--wiping-delay", "0.5", "--record-calls", str(tmp / "calls.jsonl"))
    async with run_with_a_driver(tmp, registry, *flags) as (run, driver, kubeconfig):
        line = await run.wait_line('msg="Registered DRA plugin"')
        assert f"driverName={GPU}" in line and "chosenService=v1.DRAPlugin" in line and "numPlugins=1" in line
        await driver.wait_line("published ResourceSlices")
        kube = KubeClient.from_kubeconfig(kubeconfig)
        try:
            assert len(await slice_names(kube)) == 1
            assert await driver.stop() == 0
            await run.wait_line('msg="Unregistered DRA plugin"')
            await run.wait_line(f'msg="Deleted ResourceSlices".*fieldSelector="spec.driver={GPU},spec.nodeName=node-1"')
            assert await slice_names(kube) == set()
        finally:
            kube.close()
    assert (tmp / "calls.jsonl").exists()


async def test_run_command_rejects_bad_flags_in_one_line(registry: Path):
    run = await Process.start("run", "--node-name", "n", "--registry-dir", str(registry), "--call-timeout", "0")
    assert await run.wait() == 2
    assert run.lines == [
        "kubelet-dra: error: --call-timeout: the call timeout must be positive (fix: give a number of seconds)"
    ]


async def test_run_command_rejects_an_unwritable_call_record_file(registry: Path, tmp: Path):
    run = await Process.start(
        "run", "--node-name", "n", "--registry-dir", str(registry), "--record-calls", str(tmp / "no" / "such.jsonl")
    )
    assert await run.wait() == 2
    assert run.lines[-1].startswith(f"kubelet-dra: error: {tmp}/no/such.jsonl: cannot write the call record file")


@pytest.mark.skipif(os.geteuid() != 0, reason="/dev/full belongs to root: the recorder refuses another user's file")
async def test_run_registers_a_driver_whose_calls_cannot_be_written_to_the_record_file(tmp: Path, registry: Path):
    """``--record-calls`` on a full disk: GetInfo and the notify still go through, the failure is one log line."""
    async with run_with_a_driver(tmp, registry, "--record-calls", "/dev/full") as (run, driver, _):
        line = await run.wait_line('msg="Registered DRA plugin"')
        assert f"driverName={GPU}" in line
        await driver.wait_line("registered with the kubelet")
    said = [line for line in run.lines if "call record file" in line]
    assert len(said) == 1 and "path=/dev/full" in said[0] and 'err="No space left on device"' in said[0], said


@pytest.mark.parametrize("planted", ["link", "another user's file"])
async def test_run_refuses_a_call_record_file_it_would_reach_through_a_link_or_take_from_another_user(
    registry: Path, tmp: Path, planted: str
):
    """A name someone else left in a shared dir: ``run`` says so in one line and writes nothing through it."""
    theirs = tmp / "theirs"
    theirs.write_text("their data\n")
    record = tmp / "calls.jsonl"
    if planted == "link":
        record.symlink_to(theirs)
        refused = "it is a symbolic link, which is not followed"
    else:
        if os.geteuid() != 0:
            pytest.skip("giving a file to another user takes root")
        theirs.rename(record)
        os.chown(record, 65534, 65534)
        refused = "the file belongs to another user"
    run = await Process.start(
        *("run", "--node-name", "n", "--registry-dir", str(registry)),
        *("--kubeconfig-out", str(tmp / "kubeconfig"), "--record-calls", str(record)),
    )
    try:
        assert await run.wait() == 2
    finally:
        await run.stop()
    assert run.lines[-1] == (
        f"kubelet-dra: error: {record}: cannot write the call record file: {refused} "
        "(fix: pass --record-calls a writable file of your own, not a link)"
    )
    assert not any("Traceback" in line for line in run.lines), run.lines
    assert (theirs if planted == "link" else record).read_text() == "their data\n"
