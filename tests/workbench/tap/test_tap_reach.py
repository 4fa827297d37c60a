"""Through the tap, a node learns the driver's reachability as it would without it: a driver whose endpoint nothing
serves is never connected, a killed driver's connection breaks (a wipe is armed) and comes back with the driver,
and a removed service socket fails new dials while the connection made before stays."""

from __future__ import annotations

import signal
from pathlib import Path

from helpers import eventually
from nodeenv import GPU, NodeEnv

from kubelet_dra.kubelet.kubelet import Node
from kubelet_dra.workbench.tap import Tap


def connected(node: Node) -> bool:
    return any(instance.connected for instance in node.instances(GPU))


async def test_an_endpoint_nothing_serves_is_not_served_by_the_tap_either(env: NodeEnv) -> None:
    drivers = env.root / "drv"
    async with env.node(wiping_delay=30.0) as node, Tap(str(drivers), str(env.registry)) as tap:
        unserved = env.root / "nothing" / "dra.sock"
        await env.spawn_driver(GPU, "--registry-dir", str(drivers), f"--fault-getinfo-endpoint={unserved}")
        await node.wait_for(lambda: node.instances(GPU), timeout=20)
        (view,) = tap.mirrors()
        assert [instance.endpoint for instance in node.instances(GPU)] == [view.tap_endpoint]
        assert await eventually(lambda: GPU in node.pending_wipes(), timeout=10), "the node armed the wipe"
        assert not connected(node) and not Path(view.tap_endpoint).exists()
    # the tap found the endpoint unreachable within the kubelet's 1 s GetInfo deadline: one GetInfo, answered
    assert [record.status for record in tap.recorder.records(method="GetInfo")] == ["OK"]


async def test_a_killed_driver_breaks_the_node_s_connection_through_the_tap(env: NodeEnv) -> None:
    drivers = env.root / "drv"
    async with env.node(wiping_delay=30.0) as node, Tap(str(drivers), str(env.registry)) as tap:
        driver = await env.spawn_driver(GPU, "--registry-dir", str(drivers))
        await node.wait_for(lambda: connected(node), timeout=20)
        (view,) = tap.mirrors()
        driver.proc.send_signal(signal.SIGKILL)
        await driver.wait()
        await node.wait_for(lambda: not connected(node), timeout=10)
        assert await eventually(lambda: GPU in node.pending_wipes(), timeout=10), "the node armed the wipe"
        assert not Path(view.tap_endpoint).exists(), "new dials fail as they would on the killed driver's socket"

        await env.spawn_driver(GPU, "--registry-dir", str(drivers))
        await node.wait_for(lambda: connected(node), timeout=20)
        assert await eventually(lambda: GPU not in node.pending_wipes(), timeout=10), "the wipe was cancelled"


async def test_a_removed_service_socket_keeps_the_made_connection_and_fails_new_dials(env: NodeEnv) -> None:
    drivers = env.root / "drv"
    async with env.node() as node, Tap(str(drivers), str(env.registry)) as tap:
        driver = await env.spawn_driver(GPU, "--registry-dir", str(drivers))
        await node.wait_for(lambda: connected(node), timeout=20)
        (view,) = tap.mirrors()
        (driver.plugin_dir / "dra.sock").unlink()
        assert await eventually(lambda: not Path(view.tap_endpoint).exists(), timeout=5), "new dials fail"
        assert connected(node), "the connection made before stays, as it does on the driver's own socket"
