"""``--config`` files, settings resolution and knob parsing: every mistake names the file, field and fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubelet_dra.peers.driver.configfile import EXAMPLE, DriverConfig, LabelSelector, Requirement, load_config
from kubelet_dra.peers.driver.knobs import Faults, parse_assignment
from kubelet_dra.peers.driver.settings import DEFAULT_DEVICES, resolve
from kubelet_dra.peers.errors import ConfigError, UsageError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "driver.yaml"
    path.write_text(text)
    return path


def test_the_documented_example_loads(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, EXAMPLE))
    assert config == DriverConfig(
        driver_name="gpu.example.com",
        devices=4,
        node_selector=LabelSelector({"example.com/gpu": "true"}),
        max_allocations=2,
    )


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ("devices: [1]\n", "devices", "expected int, got list"),
        ("devices: -1\n", "devices", "must not be negative"),
        ("devices: true\n", "devices", "expected int, got bool"),
        ("driverName: Not_A_DNS_Name\n", "driverName", "not a lowercase DNS subdomain"),
        ("sharing: sometimes\n", "sharing", "unknown value 'sometimes'"),
        ("availability: node-selector\n", "sliceNodeSelector", "needs nodeSelectorTerms"),
        ("sliceNodeSelector: {nodeSelectorTerms: []}\n", "sliceNodeSelector", "not used with availability node-local"),
        ("nodeSelector: {matchLabel: {a: b}}\n", "nodeSelector.matchLabel", "unknown field"),
        ("nodeSelector: {matchExpressions: [{key: a, operator: Near}]}\n", "operator", "unknown operator 'Near'"),
        ("nodeSelector: {matchExpressions: [{key: a, operator: In}]}\n", "values", "In needs a list of values"),
        ("maxAlocations: 2\n", "maxAlocations", "unknown field"),
        ("devices: [unclosed\n", "", "not valid YAML"),
        ("- a\n- list\n", "", "must be a YAML mapping"),
    ],
)
def test_bad_config_names_file_field_and_fix(tmp_path: Path, text: str, field: str, problem: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.where.startswith(str(path))
    assert field in caught.value.where
    assert problem in caught.value.what
    assert caught.value.fix


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read driver config"):
        load_config(tmp_path / "absent.yaml")


def test_label_selector_semantics() -> None:
    selector = LabelSelector(
        {"zone": "a"},
        (Requirement("gpu", "In", ("x", "y")), Requirement("tainted", "DoesNotExist"), Requirement("rack", "Exists")),
    )
    assert selector.matches({"zone": "a", "gpu": "y", "rack": "1"})
    assert not selector.matches({"zone": "a", "gpu": "z", "rack": "1"})
    assert not selector.matches({"zone": "a", "gpu": "x", "rack": "1", "tainted": ""})
    assert not selector.matches({"zone": "b", "gpu": "x", "rack": "1"})
    assert LabelSelector(match_expressions=(Requirement("gpu", "NotIn", ("x",)),)).matches({})


def test_explicit_values_beat_the_config_which_beats_defaults() -> None:
    config = DriverConfig(driver_name="config.example.com", devices=3)
    from_config = resolve(node_name="n", config=config)
    assert (from_config.driver_name, from_config.devices) == ("config.example.com", 3)
    explicit = resolve(node_name="n", config=config, driver_name="flag.example.com", devices=0)
    assert (explicit.driver_name, explicit.devices) == ("flag.example.com", 0)
    assert resolve(node_name="n").devices == DEFAULT_DEVICES
    assert explicit.plugin_dir == Path("/var/lib/kubelet/plugins/flag.example.com")
    assert explicit.registration_socket == Path("/var/lib/kubelet/plugins_registry/flag.example.com-reg.sock")


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        ({"node_name": ""}, "node name is required"),
        ({"driver_name": "UPPER.example.com"}, "not a lowercase DNS subdomain"),
        ({"plugin_dir": Path("/tmp/" + "x" * 120)}, "longer than the 107 bytes"),
        ({"republish_delay": 0}, "more than 0 seconds"),
    ],
)
def test_bad_settings_are_usage_errors(values: dict, problem: str) -> None:
    with pytest.raises(UsageError, match=problem):
        resolve(**{"node_name": "n", **values})


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("prepare-block", ("prepare-block", "true")),
        ("prepare-delay=2s", ("prepare-delay", "2s")),
        ("versions=v1beta1", ("versions", "v1beta1")),
    ],
)
def test_knob_assignments(text: str, expected: tuple[str, str]) -> None:
    assert parse_assignment(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("no-such-knob=1", "unknown fault knob 'no-such-knob'"),
        ("prepare-delay", "needs a value"),
        ("prepare-delay=soon", "bad value 'soon'"),
        ("versions=v2", "bad value 'v2'"),
        ("prepare-block=maybe", "bad value 'maybe'"),
    ],
)
def test_bad_knob_assignments(text: str, problem: str) -> None:
    with pytest.raises(UsageError, match=problem):
        parse_assignment(text)


def test_faults_parse_written_values_and_clear() -> None:
    faults = Faults({"prepare-delay": "500ms", "prepare-block": True})
    assert faults.get("prepare-delay") == 0.5
    assert faults.active() == {"prepare-delay": 0.5, "prepare-block": True}
    faults.clear(["prepare-block"])
    assert faults.get("prepare-block") is False
    faults.clear()
    assert faults.active() == {}
    assert faults.get("versions") == "all"
