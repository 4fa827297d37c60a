"""The ``reserve`` step stands in for the scheduler: once the pod's last claim is reserved for it, the pod is
annotated as the control plane marks a pod it placed, the change a cluster's binding would be. Without it a real
kubelet, which retries a failed prepare only at its pod resync (60-90 s) or on a change of the pod, left share-ids'
pod Pending for 59 s after the reservation."""

from __future__ import annotations

from kubelet_dra.workbench.scenarios.loader import loads
from kubelet_dra.workbench.scenarios.replayer import replay
from kubelet_dra.workbench.scenarios.replayreport import failures

ALLOCATED = """\
  - apiVersion: resource.k8s.io/v1
    kind: ResourceClaim
    metadata: {{name: {name}, namespace: default}}
    spec: {{devices: {{requests: [{{name: gpu, exactly: {{deviceClassName: gpu.example.com}}}}]}}}}
    status:
      allocation:
        devices:
          results: [{{request: gpu, driver: gpu.example.com, pool: node-1, device: {device}}}]
"""
SCENARIO = (
    """\
apiVersion: kubelet-dra.dev/v1alpha1
kind: Scenario
metadata: {name: reserved-by-hand}
node: {controlPlane: false}
timing: {podBackOffPeriod: 60s, syncFrequency: 60s, within: 5s}
drivers:
  - {id: gpu, name: gpu.example.com, reference: {devices: 2}}
objects:
  - apiVersion: resource.k8s.io/v1
    kind: DeviceClass
    metadata: {name: gpu.example.com}
    spec: {selectors: [{cel: {expression: "device.driver == 'gpu.example.com'"}}]}
"""
    + ALLOCATED.format(name="first", device="device-0")
    + ALLOCATED.format(name="second", device="device-1")
    + """\
steps:
  - expect:
      registration: {driver: gpu}
  - createPod: {name: p1, claims: {a: first, b: second}}
  - reserve: {claim: first, pod: p1}
  - reserve: {claim: second, pod: p1}
  - expect:
      pod: {pod: p1, phase: Running}
"""
)


async def test_the_last_reservation_marks_the_pod_and_the_node_runs_it_without_waiting_for_its_resync() -> None:
    result = await replay(loads(SCENARIO, "reserve.yaml"))
    assert result.passed, failures(result)
    messages = [step.message for step in result.results[2:4]]
    assert messages == [
        "claim first reserved for pod p1",
        "claim second reserved for pod p1; all its claims reserved: pod annotated",
    ]
