"""The real DRA manager's words read as kubelet-dra's: ``dra-manager-harness`` 1.36.2's trace and results, as it
wrote them during a replay of ``unprepare-pod-reference-1-36`` (``tests/fixtures/kubelet-1.36/harness``)."""

from __future__ import annotations

import datetime
from pathlib import Path

from kubelet_dra.workbench.fidelity.columns import calls
from kubelet_dra.workbench.realnode.harnesstrace import read_outcome, read_trace, status_name

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "kubelet-1.36" / "harness"
DRIVER = "gpu.example.com"
ENDPOINT = "/tmp/kd-7mmobgju/plugins/gpu/dra.sock"
# the processes started a few seconds before their lines, which carry the local time of day only
STARTED = datetime.datetime(2026, 11, 27, 17, 49, 29).timestamp()


def _lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text().splitlines()


def test_a_step_s_calls_are_records_in_kubelet_dra_s_form():
    trace = read_trace(_lines("prepare.trace"), STARTED)
    by_method = {record.method.rpartition("/")[2]: record for record in trace.calls}
    assert list(by_method) == ["GetInfo", "NotifyRegistrationStatus", "NodeWatchResources", "NodePrepareResources"]
    notify, health, prepare = (
        by_method[m] for m in ("NotifyRegistrationStatus", "NodeWatchResources", "NodePrepareResources")
    )
    # Go leaves out a message's defaults; kubelet-dra's records show them
    assert notify.request == {"plugin_registered": True, "error": ""} and notify.driver == ""
    assert (health.status, health.details, health.streaming, health.response) == (
        "UNIMPLEMENTED",
        "Method not found!",
        True,
        [],
    )
    assert (prepare.driver, prepare.endpoint, prepare.status) == (DRIVER, ENDPOINT, "OK")
    assert prepare.request["claims"][0]["name"] == "gpu-claim"
    [device] = prepare.response["claims"][prepare.request["claims"][0]["uid"]]["devices"]
    assert device["device_name"] == "device-0" and len(device["cdi_device_ids"]) == 2
    assert abs(prepare.duration - 0.013877461) < 1e-9
    # the wall clock from the time of day: a stream starts at its opening line, a call ends at its line
    opened = datetime.datetime.fromtimestamp(health.started_at)
    assert opened.strftime("%H:%M:%S.%f") == "17:49:34.237518"
    ended = datetime.datetime.fromtimestamp(prepare.started_at + prepare.duration)
    assert ended.strftime("%H:%M:%S.%f") == "17:49:34.261865"


def test_the_node_s_registrations_follow_its_log_lines():
    lines = _lines("serve.trace")
    registered = lines[: next(i for i, line in enumerate(lines) if "connected=false" in line)]
    during = read_trace(registered, STARTED)
    assert during.wiped_at_start
    [entry] = during.registrations.values()
    assert (entry.driver, entry.endpoint, entry.service, entry.connected) == (DRIVER, ENDPOINT, "v1.DRAPlugin", True)
    assert read_trace(lines, STARTED).registrations == {}, "the driver stopped: unregistered at the end"


def test_the_calls_column_reads_the_trace_as_a_kubelet_s_calls():
    """A step's GetInfo resolves the driver of its registration calls, as the simulated node's records do."""
    lines = calls([record.to_json() for record in read_trace(_lines("prepare.trace"), STARTED).calls])
    assert lines[0].startswith(f"{DRIVER}: Registration/GetInfo OK request={{}}")
    assert f"{DRIVER}: Registration/NotifyRegistrationStatus OK" in lines[1]
    assert any(line.startswith(f"{DRIVER}: DRAPlugin/NodePrepareResources OK") for line in lines)


def test_each_operation_s_outcome_and_cdi_devices():
    outcomes = [read_outcome(line) for line in _lines("steps.out")]
    first = read_outcome("\n".join(_lines("steps.out")[:2]))
    assert first.error == "" and first.cdi["default/p1/main"][0] == "k8s.gpu.example.com/device=common"
    assert outcomes[2].error.endswith(
        "is not allowed to use ResourceClaim gpu-claim (bac8fd4d-2143-4400-a97c-8739b06287b5)"
    )
    assert outcomes[3].error == "" and outcomes[3].cdi == {}
    assert read_outcome("F1127 the harness could not read the pod").error is None


def test_go_s_code_names_are_grpc_s():
    assert [status_name(code) for code in ("OK", "Canceled", "DeadlineExceeded", "Unimplemented", "Unavailable")] == [
        "OK",
        "CANCELLED",
        "DEADLINE_EXCEEDED",
        "UNIMPLEMENTED",
        "UNAVAILABLE",
    ]
