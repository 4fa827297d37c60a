"""The tap in front of the real Go example driver: what the Go gRPC server answers reaches the caller unchanged.

A Go server answers a method it does not serve (the health stream of a driver without it) at once,
before the request is even read; a proxy that still writes the request then turns the status into
INTERNAL "Internal error from Core" in a share of the calls that grows with the machine's load (the race
needs the load to show, so this test guards the outcome, not the timing). Fifty watches through the tap must all
end as they do directly: UNIMPLEMENTED, "unknown service v1alpha1.DRAResourceHealth".
"""

from __future__ import annotations

import asyncio
import subprocess
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from helpers import eventually
from nodeenv import unique
from realk8s import example_driver_cmd

from kubelet_dra.peers.api.calls import CallRecorder
from kubelet_dra.peers.api.services import DRA_HEALTH_V1ALPHA1
from kubelet_dra.peers.kube.client import KubeClient, api_path
from kubelet_dra.peers.log import get_logger
from kubelet_dra.workbench.tap.forward import Forwarder, Upstream
from kubelet_dra.workbench.testbed.serverthread import ServerThread

WATCHES = 50


@pytest.fixture
async def go_driver(interop_bin: Path, apiserver: ServerThread, short_dir: Path) -> AsyncIterator[Path]:
    """The Go example driver serving on ``short_dir``; its service socket."""
    kube = KubeClient.from_kubeconfig(str(apiserver.kubeconfig))
    node = unique("tap-go-node")
    await kube.request(
        "POST", api_path("", "v1", "nodes"), body={"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}
    )
    kube.close()
    values = {
        "node": node,
        "kubeconfig": apiserver.kubeconfig,
        "registry_dir": short_dir / "reg",
        "plugins_root": short_dir / "plugins",
        "cdi_root": short_dir / "cdi",
    }
    (short_dir / "reg").mkdir()
    log = (short_dir / "driver.log").open("w")
    process = subprocess.Popen(
        example_driver_cmd(interop_bin, "gpu").format_map(values).split(), stdout=log, stderr=subprocess.STDOUT
    )
    socket = short_dir / "plugins" / "gpu.example.com" / "dra.sock"
    try:
        registration = short_dir / "reg" / "gpu.example.com-reg.sock"  # made once the service socket serves
        assert await eventually(registration.is_socket, timeout=30), (short_dir / "driver.log").read_text()[-2000:]
        yield socket
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


async def watch_outcomes(target: str) -> Counter[tuple[str, str]]:
    outcomes: Counter[tuple[str, str]] = Counter()
    request = DRA_HEALTH_V1ALPHA1.message_class("NodeWatchResourcesRequest")()
    for _ in range(WATCHES):
        async with grpc.aio.insecure_channel(f"unix:{target}") as channel:
            call = DRA_HEALTH_V1ALPHA1.stub(channel).NodeWatchResources(request)
            with pytest.raises(grpc.aio.AioRpcError) as failed:
                async for _ in call:
                    pass
            outcomes[(failed.value.code().name, failed.value.details() or "")] += 1
    return outcomes


async def test_a_go_driver_s_unimplemented_passes_the_tap_every_time(go_driver: Path, short_dir: Path) -> None:
    recorder = CallRecorder()
    upstream = Upstream(str(go_driver))
    tap = grpc.aio.server()
    tap.add_generic_rpc_handlers((Forwarder(upstream, recorder, get_logger("tap")),))
    tap.add_insecure_port(f"unix:{short_dir / 'tap.sock'}")
    await tap.start()
    try:
        async with asyncio.timeout(120):  # the kubelet's health watch has no deadline: the test has one
            direct = await watch_outcomes(str(go_driver))
            through = await watch_outcomes(str(short_dir / "tap.sock"))
    finally:
        await tap.stop(None)
        await upstream.close()
        await asyncio.sleep(0)
    assert direct == Counter({("UNIMPLEMENTED", "unknown service v1alpha1.DRAResourceHealth"): WATCHES})
    assert through == direct
    assert Counter(record.status for record in recorder.records()) == Counter({"UNIMPLEMENTED": WATCHES})
