"""The ``blocked`` expectation asks the reference driver which calls its block knobs hold, so a restart scenario
cuts a call that is in flight on any node (the real kubelet may not have reached the call when a pod condition
already holds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubelet_dra.workbench.scenarios.loader import ScenarioError, loads
from kubelet_dra.workbench.scenarios.replayer import replay
from kubelet_dra.workbench.scenarios.replayreport import failures

LIBRARY = Path(__file__).resolve().parents[3] / "scenarios"
# the drivers and objects of a library file that blocks a prepare, with a device for each of two pods
HEAD = (LIBRARY / "kubelet-restart-during-prepare.yaml").read_text().partition("steps:")[0]
SCENARIO = (
    HEAD.replace("devices: 1,", "devices: 2,")
    + """\
steps:
  - fault: {driver: gpu, set: {prepare-block: true}}
  - createPod: {name: p1, templates: {gpu: one-gpu}}
  - createPod: {name: p2, templates: {gpu: one-gpu}}
  - expect:
      name: both pods' prepares held
      blocked: {driver: gpu, method: NodePrepareResources, count: 2}
  - fault: {driver: gpu, clear: [prepare-block]}
  - expect:
      - pod: {pod: p1, phase: Running}
      - pod: {pod: p2, phase: Running}
  - expect:
      name: none held once the knob is cleared
      blocked: {driver: gpu, method: NodePrepareResources}
      within: 500ms
"""
)


async def test_blocked_holds_while_the_driver_holds_the_calls_and_says_what_it_holds_otherwise():
    result = await replay(loads(SCENARIO, "blocked.yaml"))
    assert [step.name for step in result.broken] == ["none held once the knob is cleared"], failures(result)
    assert "saw blocked: none" in result.broken[0].message, failures(result)
    held = next(step for step in result.results if step.name == "both pods' prepares held")
    assert held.result == "passed", failures(result)


def test_blocked_needs_the_reference_drivers_control_socket():
    text = SCENARIO.replace("reference: {devices: 2, republishDelay: 500ms}", 'command: "run {plugin_dir}"')
    with pytest.raises(ScenarioError) as caught:
        loads(text, "s.yaml")
    assert any(
        "blocked.driver: blocked needs the reference driver's control socket; driver 'gpu' is not one" in str(issue)
        for issue in caught.value.issues
    ), caught.value.issues
