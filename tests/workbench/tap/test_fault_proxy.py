"""The fault proxy in the testbed: knobs set and cleared at run time, refused with the reason, recorded as seen."""

from __future__ import annotations

import os

import pytest

from kubelet_dra.kubelet.kubelet import NodeOptions
from kubelet_dra.peers.errors import UsageError
from kubelet_dra.workbench.tap import WIRE_KNOBS, FaultProxy, WireFaults, unsupported
from kubelet_dra.workbench.tap.faults import NOT_ON_THE_WIRE
from kubelet_dra.workbench.testbed import DriverSpec, Testbed, TestbedOptions, manifests, objects

GPU = "gpu.example.com"
V1_ONLY = {"name": GPU, "supported_versions": ["v1.DRAPlugin", "v1.DRAResourceHealth"]}


def test_every_knob_is_a_wire_knob_or_refused_with_a_reason():
    names = {knob.name for knob in WIRE_KNOBS}
    assert names.isdisjoint(NOT_ON_THE_WIRE)
    for name in NOT_ON_THE_WIRE:
        assert (unsupported(name, "1") or "").startswith(f"{name} is not a wire knob: ")
    assert unsupported("prepare-error", "boom", V1_ONLY) is None


@pytest.mark.parametrize(
    ("value", "info", "reason"),
    [
        ("v1", V1_ONLY, None),
        ("none", V1_ONLY, None),
        ("v1beta1", V1_ONLY, f"versions=v1beta1 needs a driver that serves v1beta1.DRAPlugin; {GPU} advertises"),
        ("all", V1_ONLY, "versions=all needs a driver that serves v1beta1.DRAPlugin"),
        ("v1beta1", None, None),
        ("v1alpha4", None, "versions=v1alpha4 needs a driver that serves the legacy v1alpha3.NodeService itself"),
        ("1.0.0", V1_ONLY, "versions=1.0.0 needs a driver that serves the legacy"),
    ],
)
def test_unsupported_says_what_a_versions_value_needs_of_the_driver(value, info, reason):
    said = unsupported("versions", value, info)
    assert (said is None) if reason is None else (said or "").startswith(reason)


def test_wire_faults_refuse_what_they_cannot_carry_out_and_set_nothing_then():
    faults = WireFaults({"prepare-error": "boom"})
    with pytest.raises(UsageError) as refused:
        faults.set({"prepare-block": "true", "require-count": "2"})
    assert "fault knob require-count" in str(refused.value) and "a policy of the reference driver" in str(refused.value)
    with pytest.raises(UsageError, match="needs a tap that runs the driver"):
        faults.set({"exit-after-registration": "true"})
    with pytest.raises(UsageError, match="bad value 'soon' for fault knob prepare-delay"):
        faults.set({"prepare-delay": "soon"})
    assert faults.active() == {"prepare-error": "boom"}
    faults.driver_info = dict(V1_ONLY)
    with pytest.raises(UsageError, match="versions=v1beta1 needs"):
        faults.set({"versions": "v1beta1"})
    assert faults.reset({"versions": "v1", "prepare-delay": "2s"}) == {"versions": "v1", "prepare-delay": 2.0}


def test_a_proxied_driver_needs_a_testbed_with_proxies_and_wire_knobs_need_a_proxied_driver(tmp_path):
    with pytest.raises(UsageError, match="not proxied"):
        DriverSpec(GPU, wire_faults={"prepare-error": "boom"})
    with pytest.raises(UsageError, match="behind the fault proxy, and this testbed has none"):
        Testbed(workdir=tmp_path).driver_process(DriverSpec(GPU, proxied=True))


async def test_knobs_set_at_run_time_hold_and_release_a_call_and_the_records_show_what_the_node_saw():
    options = TestbedOptions(node=NodeOptions(call_timeout=20))  # the hold is the knob's, not the deadline's
    async with Testbed(options, proxies=FaultProxy) as bed:
        driver = await bed.add_driver(DriverSpec(GPU, proxied=True))
        proxy = driver.proxy
        assert isinstance(proxy, FaultProxy)
        assert await driver.set_faults({"prepare-block": "true"}) == {"prepare-block": True}
        with pytest.raises(UsageError, match="cdi-skip-write"):
            await driver.set_faults({"cdi-skip-write": "true"})
        for manifest in (
            manifests.device_class(GPU),
            manifests.claim("c1", GPU),
            manifests.pod("p1", bed.options.node_name, claims={"dev": "c1"}),
        ):
            await objects.apply(bed.kube, manifest)

        async def blocked() -> bool:
            return (await driver.status())["blocked"] == {"NodePrepareResources": 1}

        await bed.until(blocked, timeout=10, what="the prepare call held")
        assert (await driver.status())["prepared"] == [], "the driver was not asked yet"
        assert await driver.set_faults({"prepare-error": "boom"}) == {"prepare-block": True, "prepare-error": "boom"}
        assert await driver.clear_faults("prepare-block") == {"prepare-error": "boom"}
        await bed.until(lambda: bed.calls(method="NodePrepareResources"), timeout=10, what="the held call ended")
        (failed,) = bed.calls(method="NodePrepareResources")
        assert (failed.status, failed.details) == ("UNKNOWN", "prepare resource claims: boom")
        (recorded,) = proxy.recorder.records(method="NodePrepareResources")
        assert (recorded.status, recorded.details, recorded.response) == (failed.status, failed.details, None)
        await driver.clear_faults()
        assert (await driver.status())["knobs"] == {}


async def test_the_driver_s_own_sockets_are_what_a_scenario_removes_and_the_node_follows():
    async with Testbed(proxies=FaultProxy) as bed:
        driver = await bed.add_driver(DriverSpec(GPU, proxied=True, wire_faults={"prepare-error": "boom"}))
        assert driver.proxy is not None
        own = driver.proxy.driver_sockets(GPU)
        registration = bed.workdir / "proxied" / "gpu" / "registry" / f"{GPU}-reg.sock"
        assert own == {"registration": registration, "service": driver.plugin_dir / "dra.sock"}
        hidden = registration.with_name(".removed")
        os.link(registration, hidden)
        registration.unlink()
        await bed.until(lambda: not bed.node.registrations(), timeout=10, what="the node let the driver go")
        os.link(hidden, registration)
        await bed.wait_registered(driver, GPU, timeout=20)
        await driver.clear_faults()
        await bed.restart_driver(driver, GPU, kill=True)
        assert (await driver.status())["knobs"] == {"prepare-error": "boom"}, "each start has the spec's knobs"
