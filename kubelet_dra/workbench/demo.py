"""The whole DRA flow on one machine, step by step: what ``kubelet-dra demo`` shows a new user.

It starts the embedded API server, the simulated node, the offline control plane and the bundled
reference driver (a separate process, reached over its Unix sockets like any driver), then runs
one pod with a template claim through registration, slice publishing, allocation,
NodePrepareResources, Running, deletion and NodeUnprepareResources, timing each step.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from kubelet_dra.kubelet.kubelet import Node, NodeOptions
from kubelet_dra.kubelet.pod_backoff import PodSyncPeriods
from kubelet_dra.kubelet.release import DEFAULT_RELEASE, KubeletRelease
from kubelet_dra.peers.errors import KubeletDRAError
from kubelet_dra.peers.kube.client import KubeApiError, KubeClient, api_path
from kubelet_dra.workbench.testbed import DriverSpec, Testbed, TestbedOptions, manifests, objects

NODE = "demo-node"
DRIVER = "gpu.example.com"
NAMESPACE = "default"
POD = "demo-pod"
STEP_TIMEOUT = 30.0
RESOURCE = "resource.k8s.io"


@attrs.frozen
class Step:
    """One thing the demo waited for, how long it took, and what it saw."""

    title: str
    seconds: float
    detail: str


class DemoFailed(KubeletDRAError):
    """A step did not happen in time; the message says which and where the logs are."""


@attrs.define
class Demo:
    """The running pieces; ``report`` is called with each step as soon as it is done."""

    workdir: Path
    report: Callable[[Step], None]
    release: KubeletRelease = DEFAULT_RELEASE
    steps: list[Step] = attrs.Factory(list)
    kubeconfig: Path | None = None

    async def run(self, until_stopped: Callable[[], Awaitable[None]] | None = None) -> list[Step]:
        options = TestbedOptions(
            node_name=NODE, node=NodeOptions(release=self.release, pod_sync=PodSyncPeriods(0.5, 0.5))
        )
        async with Testbed(options, workdir=self.workdir) as bed:
            self.kubeconfig = bed.kubeconfig
            await bed.add_driver(DriverSpec(DRIVER, extra_args=("--devices", "2")), wait=None)
            await self._flow(bed.node, bed.kube, bed.cdi_root)
            if until_stopped is not None:
                await until_stopped()
        return self.steps

    async def _flow(self, node: Node, kube: KubeClient, cdi: Path) -> None:
        await self._step("driver registered", lambda: _registered(node))
        await self._step("ResourceSlices published", lambda: _slices(kube))
        for manifest in _objects():
            await objects.apply(kube, manifest)
        await self._step("claim generated from the template and allocated", lambda: _allocated_claim(kube))
        await self._step("NodePrepareResources", lambda: _call(node, "NodePrepareResources"))
        pod = await self._step("pod Running", lambda: _running_pod(kube))
        await self._step("CDI devices for container main", lambda: _cdi_devices(node, pod, cdi))
        await kube.request("DELETE", api_path("", "v1", "pods", namespace=NAMESPACE, name=POD))
        await self._step("NodeUnprepareResources", lambda: _call(node, "NodeUnprepareResources"))
        await self._step("pod deleted, generated claim deleted", lambda: _all_gone(kube))

    async def _step(self, title: str, probe: Callable[[], Awaitable[tuple[Any, str] | None]]) -> Any:
        """Poll ``probe`` until it returns (value, detail); record and report the step."""
        started = time.monotonic()
        deadline = started + STEP_TIMEOUT
        while (found := await probe()) is None:
            if time.monotonic() > deadline:
                raise DemoFailed(
                    f"step {title!r} did not happen within {STEP_TIMEOUT:g} s",
                    where=str(self.workdir / "kubelet-dra.log"),
                    fix=f"read the logs kept in {self.workdir}, or rerun with -v 4 to see every request and call",
                )
            await asyncio.sleep(0.05)
        value, detail = found
        step = Step(title, time.monotonic() - started, detail)
        self.steps.append(step)
        self.report(step)
        return value


async def _registered(node: Node) -> tuple[None, str] | None:
    instances = [instance for instance in node.instances(DRIVER) if instance.connected]
    if not instances:
        return None
    return None, f"{DRIVER} at {instances[0].endpoint}, service {instances[0].chosen_service}"


async def _slices(kube: KubeClient) -> tuple[None, str] | None:
    query = {"fieldSelector": f"spec.nodeName={NODE},spec.driver={DRIVER}"}
    items = (await kube.request("GET", api_path(RESOURCE, "v1", "resourceslices"), query=query)).get("items") or []
    devices = [device["name"] for item in items for device in item["spec"].get("devices") or []]
    if not devices:
        return None
    return None, f"{len(items)} slice(s), pool {NODE}, devices {', '.join(devices)}"


async def _claims(kube: KubeClient) -> list[dict[str, Any]]:
    path = api_path(RESOURCE, "v1", "resourceclaims", namespace=NAMESPACE)
    return (await kube.request("GET", path)).get("items") or []


async def _allocated_claim(kube: KubeClient) -> tuple[None, str] | None:
    for claim in await _claims(kube):
        status = claim.get("status") or {}
        results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
        if results and status.get("reservedFor"):
            devices = ", ".join(f"{r['driver']}/{r['pool']}/{r['device']}" for r in results)
            return None, f"{claim['metadata']['name']} → {devices}, reserved for {POD}"
    return None


async def _call(node: Node, method: str) -> tuple[None, str] | None:
    records = [record for record in node.recorder.records(driver=DRIVER, method=method) if record.status == "OK"]
    if not records:
        return None
    record = records[-1]
    claims = ", ".join(claim["name"] for claim in record.request.get("claims", []))
    answer = record.response if isinstance(record.response, dict) else {}
    devices = [
        f"{device['pool_name']}/{device['device_name']} [{', '.join(device['cdi_device_ids'])}]"
        for result in (answer.get("claims") or {}).values()
        for device in result.get("devices") or []
    ]
    returned = f"; devices {'; '.join(devices)}" if devices else ""
    took = f"{record.duration * 1000:.0f} ms"
    return None, f"request {record.request_id}: claims {claims}, {took}, {record.status}{returned}"


async def _running_pod(kube: KubeClient) -> tuple[dict[str, Any], str] | None:
    pod = await kube.request("GET", api_path("", "v1", "pods", namespace=NAMESPACE, name=POD))
    if (pod.get("status") or {}).get("phase") != "Running":
        return None
    return pod, f"{NAMESPACE}/{POD} on {NODE}"


async def _cdi_devices(node: Node, pod: dict[str, Any], cdi: Path) -> tuple[None, str] | None:
    assert node.manager is not None
    ids = node.manager.get_resources(pod, "main")
    specs = sorted(path.name for path in cdi.iterdir())
    return None, f"{', '.join(ids)} (spec files: {', '.join(specs)})"


async def _all_gone(kube: KubeClient) -> tuple[None, str] | None:
    try:
        await kube.request("GET", api_path("", "v1", "pods", namespace=NAMESPACE, name=POD))
        return None
    except KubeApiError as err:
        if not err.not_found:
            raise
    if await _claims(kube):
        return None
    return None, "the kubelet finished the deletion after unprepare; the claim went with its pod"


def _objects() -> list[dict[str, Any]]:
    """What a user applies: a DeviceClass, a claim template and a pod that uses it."""
    return [
        manifests.device_class(DRIVER),
        manifests.claim_template("one-gpu", DRIVER, requests=("gpu",)),
        manifests.pod(POD, NODE, templates={"gpu": "one-gpu"}),
    ]


@contextlib.contextmanager
def workdir(keep: bool) -> Iterator[Path]:
    """A short temp dir (Unix socket paths are limited to 107 bytes), removed afterwards unless kept.

    It is kept when the demo fails too: its logs are what the error message points at.
    """
    path = Path(tempfile.mkdtemp(prefix="kubelet-dra-demo-", dir="/tmp"))
    try:
        yield path
    except BaseException:
        keep = True
        raise
    finally:
        if not keep:
            shutil.rmtree(path, ignore_errors=True)
