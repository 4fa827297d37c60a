"""The testbed the suites stand on: real API server, real node, real driver processes, real cleanup."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

import pytest

from kubelet_dra.kubelet.kubelet import NodeOptions
from kubelet_dra.peers.api import dra_v1_pb2
from kubelet_dra.peers.errors import StateError, UsageError
from kubelet_dra.workbench.testbed import DriverSpec, Testbed, TestbedOptions, command_words, manifests, objects

GPU = "gpu.example.com"


def test_command_words_fills_every_placeholder():
    values = {"node": "n1", "kubeconfig": "/k", "registry_dir": "/r", "plugin_dir": "/p", "cdi_root": "/c"}
    values |= {"driver": "d.example.com", "python": "/py"}
    words = command_words(
        "{python} drv --node={node} -k {kubeconfig} '{registry_dir} x' {plugin_dir} {cdi_root}", values, where="w"
    )
    assert words == ["/py", "drv", "--node=n1", "-k", "/k", "/r x", "/p", "/c"]


def test_command_words_read_line_continuations_as_spaces():
    """A multi-line command pasted inside quotes keeps its backslash-newlines; a shell would have joined them."""
    template = "drv --node-name {node} \\\n    --cdi-root /c \\\n  --v 4"
    assert command_words(template, {"node": "n1"}, where="w") == [
        "drv",
        "--node-name",
        "n1",
        "--cdi-root",
        "/c",
        "--v",
        "4",
    ]


@pytest.mark.parametrize(
    ("template", "message"),
    [("drv --x {nodename}", "unknown placeholder {nodename}"), ("drv 'open", "cannot split"), ("   ", "is empty")],
)
def test_command_words_reject_bad_templates_with_the_fix(template: str, message: str):
    with pytest.raises(UsageError) as caught:
        command_words(template, {}, where="--driver-cmd")
    assert message in str(caught.value)
    assert "--driver-cmd" in str(caught.value)


async def test_reference_driver_runs_a_pod_through_the_control_plane():
    async with Testbed() as bed:
        driver = await bed.add_driver(DriverSpec(GPU))
        assert bed.node.plugins.usable(GPU)
        for manifest in (
            manifests.device_class(GPU),
            manifests.claim_template("one", GPU),
            manifests.pod("p1", bed.options.node_name, templates={"dev": "one"}),
        ):
            await objects.apply(bed.kube, manifest)

        async def running() -> bool:
            pod = await objects.get(bed.kube, "Pod", "p1")
            return bool(pod) and pod["status"].get("phase") == "Running"

        await bed.until(running, timeout=20, what="pod Running")
        assert [record.status for record in bed.calls(method="NodePrepareResources")] == ["OK"]
        assert (await driver.status())["prepared"], "the driver reports the prepared claim on its control socket"
        workdir = bed.workdir
    assert not workdir.exists(), "the work dir is removed after a clean run"
    assert not driver.running


@pytest.mark.parametrize("kill", [False, True], ids=["sigterm", "sigkill"])
async def test_restart_driver_returns_once_the_node_can_call_the_new_process(kill: bool):
    """After a SIGKILL the node still lists the dead process's instance for a while; the restart waits past it."""
    async with Testbed() as bed:
        driver = await bed.add_driver(DriverSpec(GPU))
        old_pid, old = driver.pid, bed.node.plugins.instances(GPU)
        await bed.restart_driver(driver, GPU, kill=kill)
        assert driver.pid != old_pid
        instance = bed.node.plugins.get_plugin(GPU)
        assert all(instance is not before for before in old), "the node calls the instance registered anew"
        response = await instance.client.node_prepare_resources(dra_v1_pb2.NodePrepareResourcesRequest())
        assert not response.claims


async def test_node_restart_keeps_calls_and_reregisters():
    async with Testbed() as bed:
        await bed.add_driver(DriverSpec(GPU))
        first = bed.node
        await bed.restart_node()
        assert bed.node is not first
        await bed.until(lambda: bed.node.plugins.usable(GPU), timeout=20, what="registered again")
        assert len(bed.calls()) >= len(first.recorder.records())


async def test_restart_node_returns_after_its_start_up_wipe():
    async with Testbed(TestbedOptions(control_plane=False)) as bed:
        await bed.add_driver(DriverSpec(GPU, extra_args=("--fault-no-republish", "true")))
        await bed.until(lambda: objects.list_objects(bed.kube, "ResourceSlice"), timeout=20, what="slices")
        await bed.restart_node()
        assert await objects.list_objects(bed.kube, "ResourceSlice") == [], "the node's stale slices are gone"


async def test_apiserver_restart_keeps_objects_and_address():
    async with Testbed(TestbedOptions(control_plane=False)) as bed:
        url = bed.apiserver.url
        await objects.apply(bed.kube, manifests.device_class(GPU))
        # The node's pod watch asks again the moment its stream ends, on a connection still open:
        # the stop refuses that watch instead of waiting out the server's shutdown (60 s).
        async with asyncio.timeout(20):
            await bed.stop_apiserver()
        with pytest.raises(StateError):
            bed.apiserver  # noqa: B018
        await bed.start_apiserver()
        assert bed.apiserver.url == url
        assert await objects.get(bed.kube, "DeviceClass", GPU) is not None


async def test_apply_replaces_and_writes_status():
    async with Testbed(TestbedOptions(control_plane=False)) as bed:
        claim = manifests.claim("c1", GPU)
        claim["status"] = {
            "allocation": {
                "devices": {"results": [{"request": "device", "driver": GPU, "pool": "node-1", "device": "device-0"}]}
            }
        }
        stored = await objects.apply(bed.kube, claim)
        assert stored["status"]["allocation"]["devices"]["results"][0]["device"] == "device-0"
        device_class = manifests.device_class(GPU)
        await objects.apply(bed.kube, device_class)
        device_class["spec"]["selectors"][0]["cel"]["expression"] = "true"
        replaced = await objects.apply(bed.kube, device_class)
        assert replaced["spec"]["selectors"][0]["cel"]["expression"] == "true"
        assert await objects.delete(bed.kube, "DeviceClass", GPU)
        assert not await objects.delete(bed.kube, "DeviceClass", GPU)


async def test_kill_leaves_sockets_and_restart_registers_again():
    async with Testbed() as bed:
        driver = await bed.add_driver(DriverSpec(GPU))
        await driver.kill()
        assert any(bed.registry_dir.iterdir()), "SIGKILL leaves the registration socket behind"
        await driver.start()
        await bed.wait_registered(driver, GPU)
        assert driver.starts == 2


async def test_faults_flip_through_the_control_socket():
    async with Testbed() as bed:
        driver = await bed.add_driver(DriverSpec(GPU))
        assert await driver.set_faults({"prepare-error": "boom"}) == {"prepare-error": "boom"}
        assert await driver.clear_faults() == {}


async def test_any_command_line_is_a_driver():
    command = 'sh -c \'exec "$0" "$@"\' {python} -m kubelet_dra driver --driver-name {driver} --node-name {node}'
    command += (
        " --kubeconfig {kubeconfig} --registry-dir {registry_dir} --plugin-dir {plugin_dir} --cdi-root {cdi_root}"
    )
    async with Testbed() as bed:
        driver = await bed.add_driver(DriverSpec(GPU, command=command))
        assert Path(driver.plugin_dir).is_dir()
        await driver.stop()
        await bed.until(lambda: not any(bed.registry_dir.iterdir()), timeout=10, what="sockets removed")


async def test_a_driver_given_the_plugins_root_finds_its_own_dir_there_and_serves_in_it():
    """Go drivers take the kubelet's plugins root and serve ``<root>/<driver>/dra.sock``; some exit when that
    dir is missing (``exit 9`` here), as Kubernetes' test driver does."""
    command = 'sh -c \'test -d {plugins_root}/{driver} || exit 9; exec "$0" "$@"\' {python} -m kubelet_dra driver'
    command += " --driver-name {driver} --node-name {node} --kubeconfig {kubeconfig} --registry-dir {registry_dir}"
    command += " --plugin-dir {plugins_root}/{driver} --cdi-root {cdi_root}"
    async with Testbed() as bed:
        driver = await bed.add_driver(DriverSpec(GPU, command=command))
        assert driver.running and (bed.plugins_root / GPU / "dra.sock").is_socket()
        assert bed.usable(GPU)


async def test_a_driver_that_exits_is_reported_with_its_log():
    command = f"{sys.executable} -c \"import sys; print('no GPUs here', file=sys.stderr); sys.exit(3)\""
    bed = Testbed()
    with pytest.raises(StateError) as caught:
        async with bed:
            await bed.add_driver(DriverSpec(GPU, command=command), wait=3)
    message = str(caught.value)
    assert "exited with code 3" in message
    assert "no GPUs here" in message
    assert bed.workdir.exists(), "a failed run keeps its work dir for the logs"
    shutil.rmtree(bed.workdir)


async def test_a_usage_error_leaves_no_work_dir_behind():
    bed = Testbed()
    with pytest.raises(UsageError):
        async with bed:
            await bed.add_driver(DriverSpec(GPU, command="drv --node={nodename}"))
    assert not bed.workdir.exists(), "nothing ran, so there is nothing to keep"


def test_given_directories_must_exist(tmp_path):
    with pytest.raises(UsageError) as caught:
        Testbed(TestbedOptions(registry_dir=str(tmp_path), cdi_root=str(tmp_path / "missing")))
    assert f"the CDI root {tmp_path / 'missing'} is not a directory" in str(caught.value)


@pytest.mark.parametrize("name", ["../kd-escaped", "a/b", "/tmp/kd-escaped"])
def test_a_driver_name_that_is_no_dir_name_is_refused_before_a_dir_is_made(name: str):
    with pytest.raises(UsageError) as caught:
        DriverSpec(name, command="true")
    assert "is not a lowercase DNS subdomain" in str(caught.value)
    assert "driver name" in str(caught.value)


async def test_the_state_dir_is_the_testbeds_own_and_one_testbeds_at_a_time(short_dir: Path):
    """A state dir holding a kubelet's checkpoint is refused, nothing written beside it; one the testbed marked is
    locked while its node runs, and its own again once it stopped."""
    foreign = short_dir / "kubelet"
    foreign.mkdir()
    (foreign / "dra_manager_state").write_bytes(b'{"Data":"{}","Checksum":0}')
    with pytest.raises(UsageError, match="was not written by kubelet-dra"):
        async with Testbed(TestbedOptions(node=NodeOptions(state_dir=str(foreign)), control_plane=False)):
            pass
    assert [path.name for path in foreign.iterdir()] == ["dra_manager_state"]

    own = TestbedOptions(node=NodeOptions(state_dir=str(short_dir / "state")), control_plane=False)
    async with Testbed(own):
        with pytest.raises(UsageError, match="is in use by another kubelet-dra node or tool"):
            async with Testbed(own):
                pass
    async with Testbed(own) as bed:
        assert bed.node_running
