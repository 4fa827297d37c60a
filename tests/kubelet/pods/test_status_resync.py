"""A status the node wrote is, as the API server stores it, the status the node would write again: a resync of a
running pod writes nothing. (The conditions lacked ``lastProbeTime``, which the server stores as null, so every
resync of every pod wrote its status again: at a thousand nodes, hundreds of writes a second.)"""

from __future__ import annotations

from typing import Any

import pytest

from kubelet_dra.kubelet.status.generate import pending_status, running_status, stopped_status
from kubelet_dra.peers.kube.client import KubeClient, api_path
from kubelet_dra.workbench.testbed import manifests
from kubelet_dra.workbench.testbed.serverthread import ServerThread

AT = "2026-01-01T00:00:00Z"
LATER = "2026-01-01T00:00:05Z"
STEPS = {
    "pending": lambda pod, at: pending_status(pod, sandbox_ready=False, at=at),
    "sandbox ready": lambda pod, at: pending_status(pod, sandbox_ready=True, at=at),
    "running": lambda pod, at: running_status(pod, {}, at=at),
    "stopped": lambda pod, at: stopped_status(pod, final=True, at=at),
}


@pytest.mark.parametrize("step", list(STEPS))
async def test_a_written_status_is_the_one_the_node_would_write_again(apiserver: ServerThread, step: str) -> None:
    kube = KubeClient.from_kubeconfig(str(apiserver.kubeconfig))
    name = f"resync-{step.replace(' ', '-')}"
    pods = api_path("", "v1", "pods", namespace="default")
    try:
        pod: dict[str, Any] = await kube.request("POST", pods, body=manifests.pod(name, "node-a"))
        for earlier in list(STEPS)[: list(STEPS).index(step) + 1]:
            wanted = STEPS[earlier](pod, AT)
            pod = await kube.request(
                "PATCH", f"{pods}/{name}/status", body={"status": wanted}, content_type="application/merge-patch+json"
            )
        again = STEPS[step](pod, LATER)
        assert {key: pod["status"].get(key) for key in again} == again
    finally:
        await kube.request("DELETE", f"{pods}/{name}", query={"gracePeriodSeconds": "0"})
        kube.close()
