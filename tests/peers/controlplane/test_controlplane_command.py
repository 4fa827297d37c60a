"""``kubelet-dra controlplane`` as a user runs it: a real process allocating claims on an API server."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

from cluster_support import (
    create_class,
    create_pod,
    create_slice,
    create_template,
    devices_of,
    list_claims,
    request,
    slice_manifest,
)
from cluster_support import device as device_manifest
from helpers import eventually

from kubelet_dra.peers.apiserver.server import EmbeddedAPIServer
from kubelet_dra.peers.kube.client import KubeClient


async def test_the_command_allocates_a_template_claim_and_stops_on_sigterm(
    server: EmbeddedAPIServer, kube: KubeClient, tmp_path: Path
) -> None:
    kubeconfig = server.kubeconfig(tmp_path / "controlplane.kubeconfig")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kubelet_dra", "controlplane", "--kubeconfig", str(kubeconfig),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        await create_slice(kube, slice_manifest("s1", "gpu.example.com", "node-a", [device_manifest("gpu-0")]))
        await create_class(kube, "gpu", ["device.driver == 'gpu.example.com'"])
        await create_template(kube, "one-gpu", [request("gpu", "gpu")])
        await create_pod(kube, "app", [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}], node="node-a")

        async def allocated() -> list[str]:
            return [device for claim in await list_claims(kube) for device in devices_of(claim)]

        assert await eventually(allocated, timeout=20) == ["gpu-0"]
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), timeout=20)
    assert process.returncode == 0, stderr.decode()
    assert "Traceback" not in stderr.decode()


async def test_a_missing_kubeconfig_is_one_clear_line(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "kubelet_dra", "controlplane", "--kubeconfig", str(tmp_path / "nope"),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, stderr = await asyncio.wait_for(process.communicate(), timeout=20)
    assert process.returncode == 2
    text = stderr.decode()
    assert "Traceback" not in text
    assert str(tmp_path / "nope") in text and "kubeconfig" in text
