"""The split of a cycle into the driver calls and the rest (``benchmarks/breakdown.py``): the harness's trace lines
as dra-manager-harness 1.36.2 printed them, and kubelet-dra's own call records, read into the same parts."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from kubelet_dra.peers.api.calls import CallRecord

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
spec = importlib.util.spec_from_file_location("breakdown", BENCHMARKS / "breakdown.py")
assert spec is not None and spec.loader is not None
breakdown = importlib.util.module_from_spec(spec)
spec.loader.exec_module(breakdown)

UID = "c7ca3270-5b21-4b2c-bc2e-f8fc93604fc6"
CLAIM = f'{{"claims":[{{"namespace":"default","uid":"{UID}","name":"bench-0-e4943a-0"}}]}}'
METHOD = "method=/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/"
TRACE = f"""\
TRACE 19:11:28.442674 grpc call=1 side=client method=/pluginregistration.Registration/GetInfo code=OK msg="" \
took=1.148453ms req={{}} resp={{"type":"DRAPlugin","name":"gpu.example.com"}}
TRACE 19:11:28.468874 grpc call=4 side=client {METHOD}NodePrepareResources code=OK msg="" took=7.501991ms \
req={CLAIM} resp={{"claims":{{"{UID}":{{"devices":[{{"request_names":["device"],"pool_name":"bench-node"}}]}}}}}}
TRACE 19:11:28.481862 grpc call=5 side=client {METHOD}NodeUnprepareResources code=OK msg="" took=611.602µs \
req={CLAIM} resp={{"claims":{{"{UID}":{{}}}}}}
"""


def test_the_harness_trace_gives_each_dra_calls_time_in_order() -> None:
    assert breakdown.traced_calls(TRACE) == (pytest.approx([0.007501991]), pytest.approx([0.000611602]))


def record(method: str, started: float, duration: float, *, streaming: bool = False) -> CallRecord:
    return CallRecord(
        request_id=1,
        driver="gpu.example.com",
        endpoint="/p/dra.sock",
        method=f"/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/{method}",
        streaming=streaming,
        request={},
        response=None,
        status="OK",
        details="",
        started_at=started,
        duration=duration,
    )


def test_the_rest_is_each_operation_less_its_call() -> None:
    records = [
        record("NodeUnprepareResources", 2.0, 0.001),
        record("NodePrepareResources", 1.0, 0.004),
        record("NodeWatchResources", 0.5, 9.0, streaming=True),
        record("NodePrepareResources", 3.0, 0.006),
        record("NodeUnprepareResources", 4.0, 0.003),
    ]
    calls = breakdown.recorded_calls(records)
    assert calls == ([0.004, 0.006], [0.001, 0.003])
    row = breakdown.Breakdown.of("kubelet-dra", ([0.010, 0.012], [0.002, 0.004]), calls)
    assert (row.prepare_call, row.prepare_rest) == pytest.approx((0.005, 0.006))
    assert (row.unprepare_call, row.unprepare_rest) == pytest.approx((0.002, 0.001))


def test_operations_and_calls_that_do_not_pair_up_are_refused() -> None:
    with pytest.raises(ValueError, match="2 prepares but 1 prepare calls"):
        breakdown.Breakdown.of("real kubelet", ([0.01, 0.02], [0.01]), ([0.005], [0.001]))
