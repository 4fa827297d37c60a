"""The tap on a loop of its own answers a kubelet's GetInfo within its 1 s deadline while the loop of the program
around it is held (the replay's: one step of its offline control plane can hold it for seconds under load)."""

from __future__ import annotations

import asyncio
import functools
import time

import grpc
from helpers import eventually
from nodeenv import GPU, NodeEnv

from kubelet_dra.peers.api import pluginregistration_pb2 as registration_pb2
from kubelet_dra.peers.api.calls import CallRecorder
from kubelet_dra.workbench.tap import Tap, TapThread
from kubelet_dra.workbench.tap.mirror import GET_INFO

KUBELET_GET_INFO_DEADLINE = 1.0
HELD = 1.5


def kubelet_get_info(socket: str) -> registration_pb2.PluginInfo:
    """GetInfo as a kubelet makes it: its own thread, 1 s deadline."""
    with grpc.insecure_channel(f"unix:{socket}") as channel:
        call = channel.unary_unary(GET_INFO)
        answer = call(registration_pb2.InfoRequest().SerializeToString(), timeout=KUBELET_GET_INFO_DEADLINE)
    return registration_pb2.PluginInfo.FromString(answer)


async def test_get_info_is_answered_while_the_callers_loop_is_held(env: NodeEnv) -> None:
    drivers = env.root / "drv"
    env.registry.mkdir(parents=True, exist_ok=True)  # the kubelet's, which no kubelet watches here
    recorder = CallRecorder()
    tap = TapThread(functools.partial(Tap, str(drivers), str(env.registry), recorder=recorder))
    await tap.start()
    try:
        await env.spawn_driver(GPU, "--registry-dir", str(drivers))
        assert await eventually(tap.mirrors, timeout=20), "the driver's registration socket is mirrored"
        (view,) = tap.mirrors()
        asking = asyncio.get_running_loop().run_in_executor(None, kubelet_get_info, view.mirror_socket)
        held_until = time.monotonic() + HELD
        while time.monotonic() < held_until:  # this loop computes (the control plane's allocation), past the deadline
            pass
        info = await asking
        assert (info.name, info.endpoint) == (GPU, tap.mirrors()[0].tap_endpoint)
        (record,) = recorder.records(method="GetInfo")
        assert record.status == "OK" and record.duration < KUBELET_GET_INFO_DEADLINE
    finally:
        await tap.stop()
    assert not (env.registry / f"{GPU}-reg.sock").exists(), "stopping the tap removed its mirror"
