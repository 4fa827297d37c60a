"""The loader checks a whole scenario file before anything runs and reports every error with file:line:column."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.workbench.scenarios.loader import ScenarioError, load, loads
from kubelet_dra.workbench.scenarios.model import seconds
from kubelet_dra.workbench.scenarios.schema import SCHEMA

LIBRARY = Path(__file__).resolve().parents[3] / "scenarios"
HEADER = "apiVersion: kubelet-dra.dev/v1alpha1\nkind: Scenario\nmetadata:\n  name: t\n"
GPU = "drivers:\n  - id: gpu\n    name: gpu.example.com\n    reference: {devices: 2}\n"


def errors(text: str) -> list[str]:
    with pytest.raises(ScenarioError) as caught:
        loads(text, "s.yaml")
    return [str(issue) for issue in caught.value.issues]


def test_every_error_is_reported_at_once_with_its_position_and_what_is_allowed():
    text = (
        HEADER
        + "timing: {wipingDelay: 2x}\n"
        + GPU
        + "    comand: foo\n"
        + "steps:\n"
        + "  - expect:\n"
        + "      pod: {pod: p, phase: Runing}\n"
        + "  - {}\n"
        + "  - sleep: 1s\n"
        + "    stop: gpu\n"
        + "  - expect:\n"
        + "      calls: {driver: gpu, count: many}\n"
    )
    assert errors(text) == [
        "s.yaml:5:23: timing.wipingDelay: bad value '2x': seconds, or a string like 500ms, 2s, 1.5m",
        "s.yaml:10:5: drivers[0].comand: unknown field 'comand' (did you mean 'command'? allowed: command, env,"
        " external, id, name, reference, start)",
        "s.yaml:13:28: steps[0].expect.pod.phase: 'Runing' is not allowed (allowed: Pending, Running, Succeeded,"
        " Failed, Gone)",
        "s.yaml:14:5: steps[1]: needs one of: apply, delete, createPod, deletePod, reserve, start, stop, kill,"
        " restart, restartNode, stopNode, startNode, stopApiServer, startApiServer, prepare, unprepare, fault,"
        " health, removeSocket, restoreSocket, sleep, wait, expect",
        "s.yaml:15:5: steps[2]: has stop and sleep; only one of them is allowed",
        "s.yaml:18:35: steps[3].expect.calls.count: expected an integer, got string 'many'",
    ]


def test_missing_required_fields_and_wrong_header():
    assert errors("apiVersion: v1\nkind: Scenario\nmetadata: {}\n") == [
        "s.yaml:1:1: missing required field 'steps'",
        "s.yaml:1:13: apiVersion: must be 'kubelet-dra.dev/v1alpha1', got 'v1'",
        "s.yaml:3:11: metadata: missing required field 'name'",
    ]


def test_yaml_syntax_error_has_its_position():
    assert errors(HEADER + "steps:\n  - sleep: [1s\n") == [
        "s.yaml:7:1: YAML syntax: expected ',' or ']', but got '<stream end>'"
    ]


def test_duplicate_keys_are_errors_not_silently_merged():
    assert errors(HEADER + "steps:\n  - sleep: 1s\n    sleep: 2s\n") == [
        "s.yaml:7:5: steps[0].sleep: duplicate field 'sleep'"
    ]


def test_semantic_errors_name_the_field_and_the_choices():
    text = (
        HEADER
        + GPU
        + "  - id: ext\n    name: x.example.com\n    external: true\n"
        + "  - id: cmd\n    name: y.example.com\n    command: run --node {nodename}\n"
        + "steps:\n"
        + "  - start: gpx\n"
        + "  - stop: ext\n"
        + "  - fault: {driver: cmd, set: {prepare-delay: soon}}\n"
        + "  - expect: {calls: {driver: gpu, count: 1, min: 2}}\n"
        + "  - expect: {claim: {podClaim: gpu}}\n"
    )
    assert errors(text) == [
        "s.yaml:11:15: drivers[1].external: an external driver needs node.registryDir (where it registers)",
        "s.yaml:14:14: drivers[2].command: unknown placeholder {nodename} (allowed: {node} {kubeconfig} {registry_dir}"
        " {plugin_dir} {plugins_root} {cdi_root} {driver} {python})",
        "s.yaml:16:12: steps[0].start: no driver with id 'gpx' (drivers: gpu, ext, cmd)",
        "s.yaml:17:11: steps[1].stop: driver 'ext' is external: the scenario cannot start or stop it",
        "s.yaml:18:21: steps[2].fault.driver: fault needs the reference driver's control socket; driver 'cmd' is not"
        " one",
        "s.yaml:18:47: steps[2].fault.set.prepare-delay: bad value 'soon' for fault knob prepare-delay: could not"
        " convert string to float: 'soon' (NodePrepareResources answers only after this long)",
        "s.yaml:19:21: steps[3].expect.calls: count and min cannot be combined",
        "s.yaml:20:21: steps[4].expect.claim: needs name (a ResourceClaim) or pod (with podClaim)",
        "s.yaml:20:32: steps[4].expect.claim.podClaim: podClaim needs pod",
    ]


def test_unknown_fault_knob_lists_the_knobs():
    (error,) = errors(HEADER + GPU + "steps:\n  - fault: {driver: gpu, set: {prepare-eror: x}}\n")
    assert error.startswith("s.yaml:10:32: steps[0].fault.set.prepare-eror: unknown name 'prepare-eror' (did you mean")


def test_an_unreadable_file_is_one_config_error(tmp_path: Path):
    with pytest.raises(ConfigError, match="cannot read the scenario"):
        load(tmp_path / "missing.yaml")


def test_names_are_generated_from_the_step_or_given():
    scenario = loads(
        HEADER
        + GPU
        + "steps:\n"
        + "  - restart: gpu\n"
        + "  - expect:\n"
        + "      - calls: {driver: gpu, method: NodePrepareResources, count: 1}\n"
        + "      - name: pod runs\n"
        + "        pod: {pod: p1, phase: Running}\n"
        + "        within: 2s\n"
    )
    first, second = scenario.steps
    assert first.name == "step 1: restart gpu"
    assert [c.name for c in second.conditions] == ["step 2: calls gpu NodePrepareResources count=1", "pod runs"]
    assert [c.within for c in second.conditions] == [10.0, 2.0]


@pytest.mark.parametrize(("text", "value"), [(2, 2.0), ("500ms", 0.5), ("2s", 2.0), ("1.5m", 90.0)])
def test_durations(text, value):
    assert seconds(text) == value


def test_published_schema_is_current():
    generated = subprocess.run(
        [sys.executable, "-m", "kubelet_dra.workbench.scenarios.schema"], capture_output=True, text=True, check=True
    ).stdout
    published = (LIBRARY / "schema.json").read_text()
    assert json.loads(published) == SCHEMA, (
        "regenerate: python -m kubelet_dra.workbench.scenarios.schema > scenarios/schema.json"
    )
    assert generated == published


@pytest.mark.parametrize("path", sorted(LIBRARY.glob("*.yaml")), ids=lambda path: path.name)
def test_library_files_load_and_point_editors_at_the_schema(path: Path):
    assert path.read_text().startswith("# yaml-language-server: $schema=./schema.json\n")
    scenario = load(path)
    assert scenario.name == path.stem
    assert scenario.description


def test_wrong_shapes_are_named_not_crashed_on():
    assert errors("[]") == ["s.yaml:1:1: expected an object, got a list"]
    assert errors(HEADER + "steps: [3, null, {expect: 3}]\n") == [
        "s.yaml:5:9: steps[0]: expected an object, got integer 3",
        "s.yaml:5:12: steps[1]: expected an object, got null",
        "s.yaml:5:27: steps[2].expect: expected an object or a list, got integer 3",
    ]


def test_feature_gates_need_a_release_that_has_them_on_the_node_and_on_restart():
    gate = "featureGates: {DRAOptionalNodeOperations: true}"
    text = HEADER + f"node: {{{gate}}}\nsteps:\n  - restartNode: {{kubeletVersion: '1.36', {gate}}}\n"
    assert errors(text) == [
        "s.yaml:5:22: node.featureGates: feature gates exist only in some releases: pin kubeletVersion too",
        "s.yaml:7:57: steps[0].restartNode.featureGates: kubelet 1.36 has no DRAOptionalNodeOperations gate",
    ]
    loads(HEADER + f"steps:\n  - restartNode: {{kubeletVersion: '1.37', {gate}}}\n  - restartNode:\n", "s.yaml")


def test_a_crash_is_a_boolean_of_restart_node_and_stop_node_only():
    text = HEADER + "steps:\n  - stopNode: {crash: 'yes'}\n  - startNode: {crash: true}\n  - restartNode: {crash: 1}\n"
    assert errors(text) == [
        "s.yaml:6:23: steps[0].stopNode.crash: expected a boolean, got string 'yes'",
        "s.yaml:7:17: steps[1].startNode.crash: unknown field 'crash' (no fields allowed here)",
        "s.yaml:8:26: steps[2].restartNode.crash: expected a boolean, got integer 1",
    ]
    loads(HEADER + "steps:\n  - stopNode: {crash: true}\n  - startNode:\n  - restartNode: {crash: true}\n", "s.yaml")


def test_a_misspelt_step_gets_one_error_that_names_the_step_meant():
    (error,) = errors(HEADER + GPU + "steps:\n  - creatPod: {name: demo}\n")
    assert error.startswith("s.yaml:10:5: steps[0].creatPod: unknown field 'creatPod' (did you mean 'createPod'?")


def test_a_step_with_no_action_at_all_still_lists_the_actions():
    (error,) = errors(HEADER + GPU + "steps:\n  - timeout: 5s\n")
    assert error.startswith("s.yaml:10:5: steps[0]: needs one of: apply, delete, createPod")


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("run --node {node:d}", "placeholder {node:d} takes no conversion or format, write {node}"),
        ("run --x {}", "unknown placeholder {}"),
        ("run --x }", "bad placeholder syntax in '}': Single '}' encountered in format string"),
    ],
)
def test_a_driver_command_placeholder_that_would_not_fill_in_is_an_error(command: str, message: str):
    driver = f"drivers:\n  - id: cmd\n    name: y.example.com\n    command: '{command}'\n"
    text = HEADER + driver + "steps:\n  - start: cmd\n"
    (error,) = errors(text)
    assert error.startswith(f"s.yaml:8:14: drivers[0].command: {message}"), error
