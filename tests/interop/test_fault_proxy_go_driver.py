"""The real Go example driver behind the fault proxy: the reference driver's wire knobs work for a driver without
any, as the node sees them (the failed prepare's status and text, a held prepare ending at the node's deadline)."""

from __future__ import annotations

from pathlib import Path

from realk8s import example_driver_cmd

from kubelet_dra.kubelet.kubelet import NodeOptions
from kubelet_dra.workbench.tap import FaultProxy, unsupported
from kubelet_dra.workbench.testbed import DriverSpec, Testbed, TestbedOptions, manifests, objects

GPU = "gpu.example.com"
CALL_TIMEOUT = 2.0


async def _pod(bed: Testbed, name: str) -> None:
    await objects.apply(bed.kube, manifests.claim(name, GPU))
    await objects.apply(bed.kube, manifests.pod(name, bed.options.node_name, claims={"dev": name}))


async def _phase(bed: Testbed, name: str) -> str:
    return ((await objects.get(bed.kube, "Pod", name)) or {}).get("status", {}).get("phase", "")


async def test_prepare_error_and_prepare_block_through_the_proxy_in_front_of_the_go_driver(interop_bin: Path):
    spec = DriverSpec(
        GPU, command=example_driver_cmd(interop_bin, "gpu"), proxied=True, wire_faults={"prepare-error": "boom"}
    )
    async with Testbed(TestbedOptions(node=NodeOptions(call_timeout=CALL_TIMEOUT)), proxies=FaultProxy) as bed:
        driver = await bed.add_driver(spec)
        await objects.apply(bed.kube, manifests.device_class(GPU))
        await _pod(bed, "failed")
        await bed.until(lambda: bed.calls(method="NodePrepareResources"), timeout=30, what="a prepare call")
        (failed,) = bed.calls(method="NodePrepareResources")
        assert (failed.status, failed.details) == ("UNKNOWN", "prepare resource claims: boom")

        assert await driver.set_faults({"prepare-block": "true"}) == {"prepare-error": "boom", "prepare-block": True}
        assert await driver.clear_faults("prepare-error") == {"prepare-block": True}
        await _pod(bed, "held")

        async def held() -> bool:
            return (await driver.status())["blocked"] == {"NodePrepareResources": 1}

        await bed.until(held, timeout=30, what="the prepare call held")
        await bed.until(
            lambda: any(call.status == "DEADLINE_EXCEEDED" for call in bed.calls(method="NodePrepareResources")),
            timeout=CALL_TIMEOUT + 10,
            what="the held call ended at the node's deadline",
        )
        assert (await driver.clear_faults()) == {}
        await _pod(bed, "runs")

        async def runs() -> bool:
            return await _phase(bed, "runs") == "Running"

        await bed.until(runs, timeout=30, what="a pod prepared by the Go driver through the proxy runs")
        info = (await driver.status())["driverInfo"]
        assert info["name"] == GPU
        assert unsupported("versions", "v1", info) is None
        assert "legacy" in (unsupported("versions", "v1alpha4", info) or "")
