"""The diagnosis table against the real kubelet 1.36.2's own log lines (tests/fixtures/kubelet-1.36, recorded
beside it while the reference driver failed registration knob by knob): each template is what it logs, and each
line is classified as the failure mode the debugger names for that knob."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubelet_dra.kubelet.pluginmanager import FAILURE_MODES
from kubelet_dra.workbench.debug.catalogue import find

LINES = (Path(__file__).parents[2] / "fixtures" / "kubelet-1.36" / "registration-failures.log").read_text().splitlines()
REGISTRY = "/tmp/rd-h3pppond/kubelet-node-1/root/plugins_registry"
PLUGINS = "/tmp/rd-h3pppond/kubelet-node-1/root/plugins"


def line_of(driver: str, marker: str) -> str:
    (line,) = [line for line in LINES if f"{driver}.example.com" in line and marker in line]
    return line


def names(driver: str, error: str = "") -> dict[str, str]:
    name = f"{driver}.example.com"
    return {
        "socket": f"{REGISTRY}/{name}-reg.sock",
        "driver": name,
        "endpoint": f"{PLUGINS}/{name}/dra.sock",
        "error": error,
    }


@pytest.mark.parametrize(
    ("mode", "driver", "error"),
    [
        ("F2", "stale", ""),
        ("F3", "getinfo-error", "rpc error: code = Unknown desc = boom"),
        ("F5", "versions-none", ""),
        ("F6", "versions-legacy", '["1.0.0"]'),
        ("F6", "versions-v1alpha4", '["v1alpha3.NodeService"]'),
        ("F9", "notify-error", "rpc error: code = Unknown desc = nope"),
    ],
)
def test_the_table_quotes_what_the_real_kubelet_logs(mode: str, driver: str, error: str) -> None:
    quoted = FAILURE_MODES[mode].kubelet_says(**names(driver, error))
    assert quoted in line_of(driver, "goroutinemap.go")


def test_a_missing_endpoint_is_quoted_as_the_real_kubelet_logs_its_health_stream_dial() -> None:
    endpoint = "/tmp/rd/nothing/dra.sock"
    quoted = FAILURE_MODES["F10"].kubelet_says(endpoint=endpoint, error="no such file or directory")
    assert quoted in line_of("getinfo-endpoint-missing", "NodeWatchResources")


@pytest.mark.parametrize(
    ("driver", "marker", "mode"),
    [
        ("getinfo-error", "goroutinemap.go", "F3"),
        ("getinfo-delay", "goroutinemap.go", "F3"),
        ("getinfo-type", "goroutinemap.go", "F4"),
        ("versions-none", "goroutinemap.go", "F5"),
        ("versions-legacy", "goroutinemap.go", "F6"),
        ("versions-v1alpha4", "goroutinemap.go", "F6"),
        ("notify-error", "goroutinemap.go", "F9"),
        ("stale", "goroutinemap.go", "F2"),
        ("getinfo-endpoint-rel", "NodeWatchResources", "F10"),
        ("getinfo-endpoint-missing", "NodeWatchResources", "F10"),
        ("getinfo-endpoint-missing", "Deleted ResourceSlices", "F10"),
        ("serve-advertised-name", "WatchResources stream", "F13"),
    ],
)
def test_each_real_kubelet_line_is_classified_as_the_failure_the_debugger_names(
    driver: str, marker: str, mode: str
) -> None:
    message = find(line_of(driver, marker))
    assert message is not None and message.mode == mode
