"""The tap between our own node and the reference driver, over real sockets: it changes nothing the node sees,
and records what the node itself records."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from helpers import eventually, kubelet_dra
from nodeenv import GPU, NIC, NodeEnv
from rich.console import Console

from kubelet_dra.kubelet.kubelet import Node
from kubelet_dra.kubelet.release import V1_36, V1_37, KubeletRelease
from kubelet_dra.peers.api.calls import CallRecorder
from kubelet_dra.peers.api.services import DRA_HEALTH_V1, DRA_HEALTH_V1ALPHA1, Service
from kubelet_dra.workbench.tap import Tap
from kubelet_dra.workbench.tap.forward import OpenCall
from kubelet_dra.workbench.tap.tapview import render


async def pod_lifecycle(env: NodeEnv) -> None:
    """A pod with a claim is prepared, runs, is deleted and unprepared."""
    pod = await env.pod_with_claim()

    async def phase() -> str | None:
        return ((await env.get_pod(pod)) or {}).get("status", {}).get("phase")

    assert await eventually(lambda: _is(phase(), "Running"), timeout=20), "the pod runs"
    await env.delete_pod(pod)
    assert await eventually(lambda: _gone(env, pod), timeout=20), "the pod's deletion finished"


async def _is(value: object, expected: str) -> bool:
    return await value == expected  # type: ignore[misc]


async def _gone(env: NodeEnv, pod: dict[str, object]) -> bool:
    return await env.get_pod(pod) is None


async def test_the_tap_records_every_call_the_node_makes_as_the_node_itself_records_it(env: NodeEnv) -> None:
    drivers, by_node, by_tap = env.root / "drv", env.root / "node.jsonl", env.root / "tap.jsonl"
    async with (
        env.pod_node(release=V1_36, record_calls=str(by_node)) as node,
        Tap(str(drivers), str(env.registry), recorder=CallRecorder(by_tap)) as tap,
    ):
        await env.spawn_driver(GPU, "--registry-dir", str(drivers))
        await node.wait_for(lambda: node.plugins.usable(GPU), timeout=20)
        (view,) = tap.mirrors()
        assert (view.driver, view.mirror_socket) == (GPU, str(env.registry / f"{GPU}-reg.sock"))
        assert [instance.endpoint for instance in node.instances(GPU)] == [view.tap_endpoint]
        await pod_lifecycle(env)
        await eventually(lambda: tap.recorder.records(method="NodeWatchResources"), timeout=10)
    methods = [record.method.rsplit("/", 1)[-1] for record in tap.recorder.records()]
    assert {"GetInfo", "NotifyRegistrationStatus", "NodePrepareResources", "NodeUnprepareResources"} <= set(methods)
    (watch, *_) = tap.recorder.records(method="NodeWatchResources")
    assert (watch.streaming, watch.status, watch.response) == (True, "UNIMPLEMENTED", [])
    code, out, err = await kubelet_dra("calls", "diff", str(by_node), str(by_tap))
    assert (code, err) == (0, ""), out
    assert out.startswith("same calls")


async def test_a_driver_that_goes_takes_its_mirror_along_and_one_that_comes_back_is_mirrored_anew(
    env: NodeEnv,
) -> None:
    drivers = env.root / "drv"
    async with env.node() as node, Tap(str(drivers), str(env.registry)) as tap:
        driver = await env.spawn_driver(GPU, "--registry-dir", str(drivers))

        def notifies() -> int:
            return len(tap.recorder.records(method="NotifyRegistrationStatus"))

        assert await eventually(lambda: notifies() == 1, timeout=20), "the kubelet's notify went through and ended"
        mirror = env.registry / f"{GPU}-reg.sock"
        assert mirror.is_socket()

        await driver.stop()
        await node.wait_for(lambda: not node.plugins.usable(GPU) and not node.instances(GPU), timeout=10)
        assert not mirror.exists() and tap.mirrors() == []
        assert not list(Path(tap.socket_dir).glob("**/*.sock")), "the tap's service socket went too"

        await env.spawn_driver(GPU, "--registry-dir", str(drivers))
        await node.wait_for(lambda: node.plugins.usable(GPU), timeout=20)
        assert await eventually(lambda: notifies() == 2, timeout=20)
        # the new mirror began after the old driver's calls: only what follows is about the driver there now
        since = tap.mirrors()[0].since
        first, *_, last = tap.recorder.records()
        assert first.started_at < since <= last.started_at
    handshakes = [(record.method.rsplit("/", 1)[-1], record.status) for record in tap.recorder.records()]
    assert handshakes == [("GetInfo", "OK"), ("NotifyRegistrationStatus", "OK")] * 2
    assert not mirror.exists(), "stopping the tap removes its sockets"


async def test_two_instances_of_a_driver_registering_from_two_dirs_get_a_service_socket_each(env: NodeEnv) -> None:
    """A rolling update: the new instance's registration socket has the old one's name in a sub-directory."""
    drivers = env.root / "drv"
    (drivers / "new").mkdir(parents=True)
    async with env.node() as node, Tap(str(drivers), str(env.registry)) as tap:
        await env.spawn_driver(GPU, "--registry-dir", str(drivers))
        await env.spawn_driver(GPU, "--registry-dir", str(drivers / "new"), "--plugin-dir", str(env.root / "p-new"))
        await node.wait_for(lambda: len(node.instances(GPU)) == 2, timeout=20)
        endpoints = sorted(view.tap_endpoint for view in tap.mirrors())
        assert sorted(instance.endpoint for instance in node.instances(GPU)) == endpoints
    assert len(set(endpoints)) == 2, endpoints


async def registration_error(node: Node) -> str:
    await node.wait_for(lambda: any(state.last_error for state in node.registrations()), timeout=20)
    return next(state.last_error for state in node.registrations() if state.last_error)


async def test_a_driver_the_kubelet_rejects_is_rejected_through_the_tap_with_the_same_words(env: NodeEnv) -> None:
    async with env.node() as node:
        driver = await env.spawn_driver(GPU, "--fault-versions=none")
        direct = await registration_error(node)
        await driver.stop()
    drivers = env.root / "drv"
    async with env.node() as node, Tap(str(drivers), str(env.registry)) as tap:
        await env.spawn_driver(GPU, "--registry-dir", str(drivers), "--fault-versions=none")
        through = await registration_error(node)
        (view,) = tap.mirrors()
    assert "empty list of supported gRPC services" in direct
    assert through.replace(view.tap_endpoint, view.driver_endpoint) == direct, "the same words, but the tap's endpoint"


async def test_a_relative_endpoint_reaches_the_kubelet_as_the_driver_gave_it(env: NodeEnv) -> None:
    drivers = env.root / "drv"
    async with env.node() as node, Tap(str(drivers), str(env.registry)) as tap:
        await env.spawn_driver(GPU, "--registry-dir", str(drivers), "--fault-getinfo-endpoint=relative/dra.sock")
        await node.wait_for(lambda: node.instances(GPU), timeout=20)
        assert [instance.endpoint for instance in node.instances(GPU)] == ["relative/dra.sock"]
        assert tap.mirrors()[0].tap_endpoint == ""


async def test_a_stale_driver_socket_fails_the_kubelet_s_get_info_instead_of_its_dial(env: NodeEnv) -> None:
    """A limit of the tap (docs/tap.md): the mirror answers, so the kubelet's dial succeeds and GetInfo fails."""
    drivers = env.root / "drv"
    drivers.mkdir()
    driver = await env.spawn_driver(GPU, "--registry-dir", str(drivers), "--fault-leave-sockets")
    await driver.stop()
    assert (drivers / f"{GPU}-reg.sock").is_socket(), "the driver left its socket, like a crash"
    async with env.node() as node, Tap(str(drivers), str(env.registry)) as tap:
        error = await registration_error(node)
    assert "failed to get plugin info using RPC GetInfo" in error and "Unavailable" in error, error
    (info,) = tap.recorder.records(method="GetInfo")[:1]
    assert info.status == "UNAVAILABLE"


@pytest.mark.parametrize(("release", "service"), [(V1_36, DRA_HEALTH_V1ALPHA1), (V1_37, DRA_HEALTH_V1)])
async def test_one_tap_serves_many_drivers_and_shows_their_open_health_streams(
    env: NodeEnv, release: KubeletRelease, service: Service
) -> None:
    drivers = env.root / "drv"
    drivers.mkdir()
    async with env.node(release=release) as node, Tap(str(drivers), str(env.registry)) as tap:
        for name in (GPU, NIC):
            await env.spawn_driver(name, "--registry-dir", str(drivers), "--health")
        await node.wait_for(lambda: node.plugins.usable(GPU) and node.plugins.usable(NIC), timeout=20)
        assert sorted(view.driver for view in tap.mirrors()) == [GPU, NIC]

        def streaming() -> list[OpenCall]:
            watch = service.method_path("NodeWatchResources")
            return [call for call in tap.open_calls() if call.method == watch and call.messages]

        assert await eventually(lambda: len(streaming()) == 2, timeout=10), tap.open_calls()
        assert sorted(call.driver for call in streaming()) == [GPU, NIC]
        console = Console(width=200, record=True, file=io.StringIO())
        console.print(render(tap.mirrors(), tap.recorder.records(), tap.open_calls()))
        shown = console.export_text()
        assert "Open calls and streams" in shown and shown.count("NodeWatchResources") >= 2
        assert "(not asked yet)" not in shown
    streams = tap.recorder.records(method=service.method_path("NodeWatchResources"))
    assert len(streams) == 2, "recorded when the tap stopped"
    for stream in streams:
        assert stream.status == "CANCELLED" and stream.streaming
        assert stream.response and all(message["devices"] for message in stream.response), "decoded, not raw"
