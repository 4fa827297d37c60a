"""``kubelet-dra controlplane``: the claim controller and allocator of a cluster, for offline mode.

Without a cluster nobody creates claims from templates, allocates devices or reserves claims
for pods; this runs those control-plane parts against an API server (usually the embedded one)
until Ctrl-C or SIGTERM. Against a real cluster its own controllers would compete with them.
"""

from __future__ import annotations

import argparse
import asyncio
import signal

from kubelet_dra.cli.command import Command
from kubelet_dra.peers.controlplane import ControlPlane
from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.peers.log import get_logger


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--kubeconfig",
        required=True,
        help="kubeconfig of the API server to work on, e.g. the one `kubelet-dra apiserver` writes",
    )


def run(args: argparse.Namespace) -> int:
    asyncio.run(serve(KubeClient.from_kubeconfig(args.kubeconfig)))
    return 0


async def serve(kube: KubeClient) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with ControlPlane(kube):
        get_logger("controlplane").info("Control plane running", apiServer=kube.host)
        await stop.wait()


COMMAND = Command(
    name="controlplane",
    description=(
        "Run the resource claim controller and a CEL device allocator against an API server: claims from"
        " templates (generated names, owner references, pod status), allocation from published ResourceSlices"
        " (DeviceClass and request selectors, ExactCount and All, exclusive or shared devices, node-local"
        " pools), reservedFor bookkeeping and clean-up. Runs until Ctrl-C or SIGTERM."
    ),
    add_arguments=add_arguments,
    run=run,
)
