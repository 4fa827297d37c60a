"""Beside a live node the tap removes only the sockets it put there, and never replaces one something listens on:
the driver that registers in the kubelet's dir again as the tap is put away, a driver registered there directly,
and another tap over the same dirs all keep their sockets."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from helpers import eventually
from nodeenv import GPU, NodeEnv

from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.workbench.tap import Tap
from kubelet_dra.workbench.tap.owned import listening


def identity(path: Path) -> tuple[int, int]:
    found = os.lstat(path)
    return found.st_dev, found.st_ino


async def test_stopping_the_tap_after_the_driver_registered_in_the_kubelet_s_dir_again_leaves_its_socket(
    env: NodeEnv,
) -> None:
    """docs/tap.md's "put it back": the driver (gone from the tap's dir without removing its socket, as a killed pod
    does) registers in the kubelet's dir again, then the tap stops."""
    drivers, registration = env.root / "drv", env.registry / f"{GPU}-reg.sock"
    async with env.node() as node:
        tap = Tap(str(drivers), str(env.registry))
        await tap.start()
        try:
            through_tap = await env.spawn_driver(GPU, "--registry-dir", str(drivers), "--fault-leave-sockets")
            await node.wait_for(lambda: node.plugins.usable(GPU), timeout=20)
            await through_tap.stop()
            await env.spawn_driver(GPU)
            direct = [str(env.root / "p-gpu" / "dra.sock")]
            await node.wait_for(lambda: [instance.endpoint for instance in node.instances(GPU)] == direct, timeout=20)
            before = identity(registration)
        finally:
            await tap.stop()
        assert identity(registration) == before and listening(registration), "the driver's own socket stays"
        await node.wait_for(lambda: node.plugins.usable(GPU), timeout=20)
        assert [instance.endpoint for instance in node.instances(GPU)] == direct


async def test_a_stale_driver_socket_never_replaces_a_driver_registered_in_the_kubelet_s_dir(env: NodeEnv) -> None:
    drivers, registration = env.root / "drv", env.registry / f"{GPU}-reg.sock"
    drivers.mkdir()
    crashed = await env.spawn_driver(GPU, "--registry-dir", str(drivers), "--fault-leave-sockets")
    await crashed.stop()
    async with env.node() as node:
        await env.start_driver(node)
        before = identity(registration)
        with pytest.raises(ConfigError, match="something listens on") as refused:
            await Tap(str(drivers), str(env.registry)).start()
        assert refused.value.where == str(registration)
        assert identity(registration) == before and listening(registration)
        assert node.plugins.usable(GPU)
    assert not list(env.registry.glob(".*")), "no private name of the tap's left behind"


async def test_a_second_tap_over_the_same_dirs_is_refused_and_leaves_the_first_one_s_sockets(env: NodeEnv) -> None:
    drivers, mirror = env.root / "drv", env.registry / f"{GPU}-reg.sock"
    async with env.node() as node, Tap(str(drivers), str(env.registry)) as first:
        await env.spawn_driver(GPU, "--registry-dir", str(drivers))
        await node.wait_for(lambda: node.plugins.usable(GPU), timeout=20)
        (view,) = first.mirrors()
        before = identity(mirror), identity(Path(view.tap_endpoint))
        with pytest.raises(ConfigError, match="something listens on"):
            await Tap(str(drivers), str(env.registry)).start()
        assert (identity(mirror), identity(Path(view.tap_endpoint))) == before
        assert listening(mirror) and node.plugins.usable(GPU)


async def test_of_two_taps_running_when_the_driver_comes_one_mirrors_it_and_the_other_s_stop_leaves_it(
    env: NodeEnv,
) -> None:
    drivers, mirror = env.root / "drv", env.registry / f"{GPU}-reg.sock"
    async with env.node() as node:
        taps = [Tap(str(drivers), str(env.registry)) for _ in range(2)]
        for tap in taps:
            await tap.start()
        try:
            await env.spawn_driver(GPU, "--registry-dir", str(drivers))
            await node.wait_for(lambda: node.plugins.usable(GPU), timeout=20)
            assert await eventually(lambda: any(tap.mirrors() for tap in taps), timeout=10)
            (winner,) = [tap for tap in taps if tap.mirrors()]
            (other,) = [tap for tap in taps if tap is not winner]
            before = identity(mirror)
            await other.stop()
            assert identity(mirror) == before and listening(mirror), "the other tap removed only its own"
            await winner.stop()
            assert not mirror.exists(), "the tap that mirrored the driver removes its mirror"
        finally:
            for tap in taps:
                await tap.stop()


async def test_a_stale_socket_at_the_mirror_path_is_replaced(env: NodeEnv) -> None:
    """What a tap killed with SIGKILL leaves behind: nothing listens on it, so the next tap takes its place."""
    drivers, mirror = env.root / "drv", env.registry / f"{GPU}-reg.sock"
    env.registry.mkdir(parents=True, exist_ok=True)
    with socket.socket(socket.AF_UNIX) as stale:
        stale.bind(str(mirror))
    async with env.node() as node, Tap(str(drivers), str(env.registry)):
        await env.spawn_driver(GPU, "--registry-dir", str(drivers))
        await node.wait_for(lambda: node.plugins.usable(GPU), timeout=20)
        assert listening(mirror)
    assert not mirror.exists()
