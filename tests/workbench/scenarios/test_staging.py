"""Staging never eats a scenario's window: what a file expects in its first second, it sees in its first second."""

from __future__ import annotations

from kubelet_dra.workbench.scenarios.loader import loads
from kubelet_dra.workbench.scenarios.replayer import replay
from kubelet_dra.workbench.scenarios.replayreport import failures

UNSERVED = """
apiVersion: kubelet-dra.dev/v1alpha1
kind: Scenario
metadata: {name: staging-window}
timing: {wipingDelay: 1s, callTimeout: 1s}
drivers:
  - id: gpu
    name: gpu.example.com
    reference: {devices: 1, faults: {getinfo-endpoint: /nonexistent/gpu.example.com/dra.sock}}
steps:
  - expect:
      name: published, seen before the wiping delay passed
      slices: {driver: gpu, count: 1}
      within: 200ms
  - expect:
      name: wiped after it
      slices: {driver: gpu, present: false}
      within: 3s
"""


async def test_staging_does_not_wait_out_a_driver_the_node_cannot_reach():
    """A driver whose endpoint nothing serves registers but never connects; staging waited for the connection
    (10 s), so the 1 s wiping delay had removed the slice before the first expectation looked."""
    result = await replay(loads(UNSERVED, "staging-window.yaml"))
    assert result.passed, failures(result)
    assert result.seconds < 6, f"staging waited {result.seconds:.1f} s for a connection that never comes"
