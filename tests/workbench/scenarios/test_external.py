"""A driver that is already running (``external: true``), against a cluster given by kubeconfig."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import KubeletDRAProcess

from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.workbench.scenarios.loader import ScenarioError, loads
from kubelet_dra.workbench.scenarios.replayer import replay
from kubelet_dra.workbench.scenarios.replayreport import failures
from kubelet_dra.workbench.testbed import objects
from kubelet_dra.workbench.testbed.serverthread import ServerThread

SCENARIO = """\
apiVersion: kubelet-dra.dev/v1alpha1
kind: Scenario
metadata: {{name: external-driver}}
node: {{name: ext-node, registryDir: {registry}, kubeconfig: {kubeconfig}}}
timing: {{within: 5s}}
drivers:
  - {{id: gpu, name: gpu.example.com, external: true}}
steps:
  - expect:
      - registration: {{driver: gpu, service: v1.DRAPlugin}}
      - slices: {{driver: gpu, count: 1}}
  - restartNode:
  - expect:
      name: registered again after the restart
      registration: {{driver: gpu}}
"""


async def test_an_already_running_driver_is_replayed_against(short_dir: Path, apiserver: ServerThread):
    registry = short_dir / "registry"
    registry.mkdir()
    driver = await KubeletDRAProcess.start(
        *("driver", "--driver-name", "gpu.example.com", "--node-name", "ext-node"),
        *("--kubeconfig", str(apiserver.kubeconfig), "--registry-dir", str(registry)),
        *("--plugin-dir", str(short_dir / "plugin"), "--cdi-root", str(short_dir / "cdi"), "--devices", "1"),
    )
    try:
        await driver.wait_line("driver started")
        scenario = loads(SCENARIO.format(registry=registry, kubeconfig=apiserver.kubeconfig), "external.yaml")
        result = await replay(scenario)
        assert result.passed, failures(result)
        restart = next(step for step in result.results if step.name.endswith(": restartNode"))
        assert restart.message == "checkpoint kept; start-up wipe deleted 1 ResourceSlice(s)"
        assert driver.proc.returncode is None, "the replay leaves an external driver running"
    finally:
        await driver.stop()


def test_a_real_cluster_cannot_be_stopped():
    text = SCENARIO.format(registry="/r", kubeconfig="/k") + "  - stopApiServer:\n"
    with pytest.raises(ScenarioError) as caught:
        loads(text, "s.yaml")
    assert [str(issue) for issue in caught.value.issues] == [
        "s.yaml:16:5: steps[3]: with node.kubeconfig the API server is a real cluster's: it cannot be stopped"
    ]


CLEAN = """\
apiVersion: kubelet-dra.dev/v1alpha1
kind: Scenario
metadata: {{name: pod-left-running}}
node: {{name: clean-node, kubeconfig: {kubeconfig}}}
timing: {{within: 5s}}
drivers:
  - {{id: gpu, name: gpu.example.com, reference: {{devices: 1}}}}
objects:
  - apiVersion: resource.k8s.io/v1
    kind: DeviceClass
    metadata: {{name: gpu.example.com}}
    spec: {{selectors: [{{cel: {{expression: "device.driver == 'gpu.example.com'"}}}}]}}
  - apiVersion: resource.k8s.io/v1
    kind: ResourceClaimTemplate
    metadata: {{name: one-gpu, namespace: default}}
    spec: {{spec: {{devices: {{requests: [{{name: gpu, exactly: {{deviceClassName: gpu.example.com}}}}]}}}}}}
steps:
  - createPod: {{name: p1, templates: {{gpu: one-gpu}}}}
  - expect:
      pod: {{pod: p1, phase: Running}}
"""


KINDS = ("Pod", "ResourceClaim", "ResourceClaimTemplate", "DeviceClass")


async def test_a_scenario_leaves_a_real_cluster_as_it_found_it(apiserver: ServerThread):
    """The pod it left running would be the next scenario's: same node name, same pod name."""
    scenario = loads(CLEAN.format(kubeconfig=apiserver.kubeconfig), "clean.yaml")
    uids = []
    for _ in range(2):
        result = await replay(scenario)
        assert result.passed, failures(result)
        uids.append(result.results[0].message.split(" uid ")[1])
    assert uids[0] != uids[1], "the second replay made a pod of its own"
    kube = KubeClient.from_kubeconfig(str(apiserver.kubeconfig))
    try:  # the server is shared with other tests: only this scenario's objects count
        left = {kind: [item["metadata"]["name"] for item in await objects.list_objects(kube, kind)] for kind in KINDS}
    finally:
        kube.close()
    ours = {
        kind: [name for name in names if name in ("p1", "one-gpu", "gpu.example.com") or name.startswith("p1-gpu-")]
        for kind, names in left.items()
    }
    assert ours == {kind: [] for kind in KINDS}
