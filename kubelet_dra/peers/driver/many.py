"""One process serving the reference driver on many nodes: a thousand simulated nodes, not a thousand processes.

Each node keeps everything a driver pod would have on it: its own registration and service sockets,
its own ResourceSlices, CDI dir, checkpoint, control socket and fault knobs (steered per node through
its plugin dir, as with one driver per process). What the instances share is what a process shares:
the interpreter, the event loop and one API client per kubeconfig (per-node identities keep theirs).
A fault that stops a driver stops that node's instance only; the process ends on SIGTERM or once
every instance has stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from kubelet_dra.peers.driver.knobs import Faults
from kubelet_dra.peers.driver.plugin import DriverPlugin
from kubelet_dra.peers.driver.settings import DriverSettings
from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.peers.log import get_logger

REQUEST_THREADS = 64
"""Threads the instances' API requests go out from (the loop's default: 6 on 2 cores): each mostly waits for
the server, and a thousand nodes publish their slices and open their watches at once."""


async def serve_many(settings: Sequence[DriverSettings], faults: Callable[[], Faults], stop: asyncio.Event) -> None:
    """Start an instance per node, run them until ``stop`` (or until each has stopped), stop them all."""
    log = get_logger("driver", nodes=len(settings))
    threads = min(REQUEST_THREADS, 4 * len(settings))
    asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(threads, "kube-request"))
    clients: dict[str | None, KubeClient] = {}
    plugins: list[DriverPlugin] = []
    try:
        for each in settings:
            kube = clients.get(each.kubeconfig)
            if kube is None:
                kube = clients[each.kubeconfig] = KubeClient.from_kubeconfig(each.kubeconfig)
            plugin = DriverPlugin(each, faults=faults(), kube=kube)
            plugins.append(plugin)
            await plugin.start()
        log.info("driver instances started", instances=len(plugins))
        waits = [asyncio.create_task(plugin.wait()) for plugin in plugins]
        stopping = asyncio.create_task(stop.wait())
        try:
            pending = set(waits)
            while pending and not stop.is_set():
                done, pending = await asyncio.wait(pending | {stopping}, return_when=asyncio.FIRST_COMPLETED)
                pending.discard(stopping)
                for plugin, wait in zip(plugins, waits, strict=True):
                    if wait in done:  # a fault knob stopped this node's driver: only its instance goes
                        await plugin.stop()
        finally:
            for task in (*waits, stopping):
                task.cancel()
    finally:
        await asyncio.gather(*(plugin.stop() for plugin in plugins))
        for kube in clients.values():
            with contextlib.suppress(Exception):
                kube.close()
        log.info("driver instances stopped", instances=len(plugins))
