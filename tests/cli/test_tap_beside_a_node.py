"""``kubelet-dra tap`` beside a live node, as a user runs it: what it refuses in one line (exit 2) before it puts
anything in the kubelet's dir, what it leaves alone, and what it keeps in memory."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
from pathlib import Path

import grpc
import pytest
from helpers import KubeletDRAProcess, eventually, kubelet_dra
from nodeenv import GPU, NodeEnv

from kubelet_dra.peers.api.calls import CALLS_KEPT
from kubelet_dra.peers.driver.settings import SOCKET_PATH_MAX

GET_INFO = "/pluginregistration.Registration/GetInfo"


async def stopped(tap: KubeletDRAProcess) -> int:
    """The tap's exit code after SIGTERM; killed when it does not stop, so a failed test leaves no process behind."""
    try:
        return await tap.stop()
    except TimeoutError:
        tap.proc.kill()
        raise


def one_line(code: int, err: str) -> str:
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


async def test_a_stale_driver_socket_is_not_mirrored_over_a_driver_registered_in_the_kubelet_s_dir(
    env: NodeEnv,
) -> None:
    drivers, registration = env.root / "drv", env.registry / f"{GPU}-reg.sock"
    for directory in (drivers, env.registry):
        directory.mkdir()
    with socket.socket(socket.AF_UNIX) as stale:  # a driver that crashed while registered through the tap
        stale.bind(str(drivers / registration.name))
    await env.spawn_driver(GPU)
    before = os.lstat(registration).st_ino
    code, _, err = await kubelet_dra(
        "tap", "--driver-registry-dir", str(drivers), "--registry-dir", str(env.registry), "--for", "2"
    )
    assert str(registration) in one_line(code, err) and "something listens on" in err
    assert os.lstat(registration).st_ino == before, "the driver's socket is the driver's"


@pytest.mark.parametrize("through", ["--driver-registry-dir", "--registry-dir"])
async def test_a_driver_dir_inside_the_kubelet_s_through_a_symlink_is_refused(short_dir: Path, through: str) -> None:
    (short_dir / "reg").mkdir()
    (short_dir / "link").symlink_to(short_dir / "reg")
    drivers, registry = short_dir / "reg" / "drivers", short_dir / "reg"
    if through == "--driver-registry-dir":
        drivers = short_dir / "link" / "drivers"
    else:
        registry = short_dir / "link"
    code, _, err = await kubelet_dra(
        "tap", "--driver-registry-dir", str(drivers), "--registry-dir", str(registry), "--for", "1"
    )
    assert "--driver-registry-dir" in one_line(code, err) and "overlap" in err


async def test_a_socket_dir_inside_the_drivers_dir_is_refused(short_dir: Path) -> None:
    (short_dir / "reg").mkdir()
    drivers = short_dir / "drivers"
    code, _, err = await kubelet_dra(
        *("tap", "--driver-registry-dir", str(drivers), "--registry-dir", str(short_dir / "reg")),
        *("--socket-dir", str(drivers / "tap"), "--for", "1"),
    )
    assert "--socket-dir" in one_line(code, err) and "mirror its own sockets" in err


async def test_a_socket_dir_no_socket_fits_in_is_refused_with_the_path_and_its_length(short_dir: Path) -> None:
    (short_dir / "reg").mkdir()
    sockets = short_dir / ("s" * SOCKET_PATH_MAX)
    code, _, err = await kubelet_dra(
        *("tap", "--driver-registry-dir", str(short_dir / "drivers"), "--registry-dir", str(short_dir / "reg")),
        *("--socket-dir", str(sockets), "--for", "1"),
    )
    path = f"{sockets}/x/dra.sock"
    assert path in one_line(code, err) and f"{len(path)} bytes" in err and f"{SOCKET_PATH_MAX}" in err


async def test_a_driver_whose_service_socket_would_be_too_long_is_not_handed_to_the_kubelet(env: NodeEnv) -> None:
    drivers = env.root / "drv"
    drivers.mkdir()
    sockets = env.root / ("s" * (90 - len(str(env.root)) - 1))  # x/dra.sock fits, gpu.example.com-reg/dra.sock not
    async with env.node() as node:
        tap = await KubeletDRAProcess.start(
            *("-v", "2", "tap", "--driver-registry-dir", str(drivers), "--registry-dir", str(env.registry)),
            *("--socket-dir", str(sockets)),
        )
        try:
            await tap.wait_line("Tap started", timeout=30)
            await env.spawn_driver(GPU, "--registry-dir", str(drivers))
            refused = await tap.wait_line("Not mirrored", timeout=30)
            path = f"{sockets}/{GPU}-reg/dra.sock"
            assert path in refused and f"{len(path)} bytes" in refused and f"{SOCKET_PATH_MAX}" in refused
            assert not (env.registry / f"{GPU}-reg.sock").exists() and not node.instances(GPU), "nothing handed over"
        finally:
            assert await stopped(tap) == 0


async def test_the_tap_keeps_its_last_calls_in_memory_and_every_call_in_its_file(env: NodeEnv) -> None:
    drivers, record, mirror = env.root / "drv", env.root / "calls.jsonl", env.registry / f"{GPU}-reg.sock"
    env.registry.mkdir()
    tap = await asyncio.create_subprocess_exec(
        *(sys.executable, "-m", "kubelet_dra", "--output", "json", "tap", "--record-calls", str(record)),
        *("--driver-registry-dir", str(drivers), "--registry-dir", str(env.registry)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert await eventually(drivers.is_dir, timeout=30), "the tap makes the drivers' dir"
        await env.spawn_driver(GPU, "--registry-dir", str(drivers))
        assert await eventually(mirror.is_socket, timeout=30)
        async with grpc.aio.insecure_channel(f"unix:{mirror}") as channel:
            for _ in range(CALLS_KEPT + 1):
                await channel.unary_unary(GET_INFO)(b"", timeout=10)
    finally:
        tap.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(tap.communicate(), 60)
    assert (tap.returncode, err) == (0, b"")
    written = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(written) == CALLS_KEPT + 1
    assert json.loads(out)["calls"] == written[-CALLS_KEPT:]
