"""A health stream that ends is not pushed to the pods: the kubelet forgets the driver's devices and a pod shows
them Unknown at its next sync (kubelet 1.36.2: 80 s after its driver stopped, its 60 s resync plus jitter)."""

from __future__ import annotations

from kubelet_dra.workbench.scenarios.loader import loads
from kubelet_dra.workbench.scenarios.replayer import replay
from kubelet_dra.workbench.scenarios.replayreport import failures

SCENARIO = """
apiVersion: kubelet-dra.dev/v1alpha1
kind: Scenario
metadata: {name: health-at-next-sync}
timing: {wipingDelay: 30s, callTimeout: 2s, podBackOffPeriod: 300ms, syncFrequency: %s, within: 5s}
drivers:
  - id: gpu
    name: gpu.example.com
    reference: {devices: 1, health: true, healthInterval: 500ms}
objects:
  - apiVersion: resource.k8s.io/v1
    kind: DeviceClass
    metadata: {name: gpu.example.com}
    spec: {selectors: [{cel: {expression: "device.driver == 'gpu.example.com'"}}]}
  - apiVersion: resource.k8s.io/v1
    kind: ResourceClaimTemplate
    metadata: {name: one-gpu, namespace: default}
    spec: {spec: {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}}
steps:
  - createPod: {name: p1, templates: {gpu: one-gpu}}
  - expect:
      pod: {pod: p1, phase: Running, health: Healthy}
  - stop: gpu
  - expect:
      name: %s
      pod: {pod: p1, health: %s}
      hold: 2s
"""


async def test_a_stopped_driver_s_devices_show_unknown_only_at_the_pod_s_next_sync():
    kept = loads(SCENARIO % ("60s", "still healthy until the next sync", "Healthy"), "kept.yaml")
    result = await replay(kept)
    assert result.passed, failures(result)
    shown = loads(SCENARIO % ("1s", "unknown after a sync", "Unknown"), "shown.yaml")
    result = await replay(shown)
    assert result.passed, failures(result)
