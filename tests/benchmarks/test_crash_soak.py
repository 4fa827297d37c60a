"""The crash soak (``benchmarks/crash_soak.py``): its judge tells allowed repeats from broken invariants, and a
short soak of real processes killed -9 keeps every invariant."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from google.protobuf import text_format
from google.protobuf.message import Message

from kubelet_dra.peers.api import dra_v1_pb2
from kubelet_dra.peers.log import format_value

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
PREPARE = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources"


def _benchmark_module(name: str) -> ModuleType:
    """A module of ``benchmarks/`` (a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


verdict = _benchmark_module("soak_verdict")
POD = verdict.PodRecord("soak-0001", "pod-uid", created=0.0)
CLAIM = ("claim-uid", "soak-0001-gpu-abcde")


def text(message: Message) -> str:
    """A message as the driver logs it at -v 6."""
    return text_format.MessageToString(message, as_one_line=True)


def call(method: str, at: float, ok: bool = True) -> Any:
    return verdict.Call(method, at, (CLAIM,), frozenset({CLAIM[0]}) if ok else frozenset())


def final(**changes: Any) -> Any:
    state = {
        "live_claims": {CLAIM[0]: POD.name},
        "running": frozenset({POD.name}),
        "pods_left": frozenset(),
        "driver_prepared": frozenset({CLAIM[0]}),
        "cdi_specs": frozenset({CLAIM[0]}),
        "checkpoint_valid": True,
        "checkpoint": {CLAIM[0]: frozenset({POD.uid})},
        "tracebacks": 0,
    }
    return verdict.FinalState(**{**state, **changes})


def test_a_repeated_prepare_is_allowed_only_after_a_kill_or_a_failed_answer() -> None:
    prepared_twice = [call(verdict.PREPARE, 1.0), call(verdict.PREPARE, 3.0)]
    killed = verdict.judge(prepared_twice, [verdict.Outage(2.0, 2.5)], {POD.name: POD}, final())
    assert (killed.repeated_prepares, killed.double_prepares, killed.held) == (1, 0, True)
    assert verdict.judge(prepared_twice, [], {POD.name: POD}, final()).double_prepares == 1
    # a killed node's last request can reach the driver after the kill, before the node is started again
    in_flight = verdict.judge(prepared_twice, [verdict.Outage(0.9, 1.5)], {POD.name: POD}, final())
    assert in_flight.double_prepares == 0
    assert verdict.judge(prepared_twice, [verdict.Outage(0.5, 0.9)], {POD.name: POD}, final()).double_prepares == 1

    after_a_failure = [call(verdict.PREPARE, 1.0, ok=False), call(verdict.PREPARE, 3.0)]
    assert verdict.judge(after_a_failure, [], {POD.name: POD}, final()).held


def test_preparing_a_pod_seen_running_is_a_double_prepare_even_after_a_kill() -> None:
    running = verdict.PodRecord(POD.name, POD.uid, created=0.0, running_seen=1.5)
    calls = [call(verdict.PREPARE, 1.0), call(verdict.PREPARE, 3.0)]
    assert verdict.judge(calls, [verdict.Outage(2.0, 2.5)], {POD.name: running}, final()).double_prepares == 1


def test_a_repeated_unprepare_needs_a_kill_unless_the_pod_was_deleted_at_once() -> None:
    gone = final(live_claims={}, running=frozenset(), driver_prepared=frozenset(), cdi_specs=frozenset(), checkpoint={})
    calls = [call(verdict.PREPARE, 1.0), call(verdict.UNPREPARE, 2.0), call(verdict.UNPREPARE, 2.1)]
    graceful = verdict.PodRecord(POD.name, POD.uid, created=0.0, deleted=1.5)
    assert verdict.judge(calls, [], {POD.name: graceful}, gone).double_unprepares == 1
    forced = verdict.PodRecord(POD.name, POD.uid, created=0.0, deleted=1.5, forced=True)
    assert verdict.judge(calls, [], {POD.name: forced}, gone).held


def test_claims_lost_leaked_or_never_unprepared_break_the_invariants() -> None:
    prepared = [call(verdict.PREPARE, 1.0)]
    assert verdict.judge(prepared, [], {POD.name: POD}, final(cdi_specs=frozenset())).lost_claims == 1
    deleted = verdict.PodRecord(POD.name, POD.uid, created=0.0, deleted=1.5)
    leaked = verdict.judge(prepared, [], {POD.name: deleted}, final(live_claims={}, running=frozenset()))
    assert (leaked.not_unprepared, leaked.leaked_claims, leaked.leaked_cdi_specs) == (1, 1, 1)
    assert leaked.stale_checkpoint_entries == 1 and not leaked.held


def test_the_driver_log_gives_each_call_and_the_claims_it_answered_ok() -> None:
    request = dra_v1_pb2.NodePrepareResourcesRequest()
    request.claims.add(namespace="default", uid=CLAIM[0], name=CLAIM[1])
    response = dra_v1_pb2.NodePrepareResourcesResponse()
    response.claims[CLAIM[0]].devices.add(pool_name="node", device_name="device-0")

    def line(ts: str, msg: str, request_id: int, **values: str) -> str:
        fields = {"msg": msg, "requestID": str(request_id), "method": PREPARE, **values}
        return f"ts={ts} level=info v=6 logger=driver " + " ".join(f"{k}={format_value(v)}" for k, v in fields.items())

    log = "\n".join(
        [
            "--- start 1: kubelet-dra driver",
            line("2026-01-01T00:00:01.000Z", "handling request", 1, request=text(request)),
            line("2026-01-01T00:00:01.020Z", "handling request succeeded", 1, response=text(response)),
            line("2026-01-01T00:00:02.000Z", "handling request", 2, request=text(request)),
            "--- start 2: kubelet-dra driver",  # killed before it answered request 2; IDs start again
            line("2026-01-01T00:00:03.000Z", "handling request", 1, request=text(request))[:60],  # cut short
        ]
    )
    first, unanswered = verdict.driver_calls(log)
    assert (first.method, first.claims, first.ok) == (verdict.PREPARE, (CLAIM,), frozenset({CLAIM[0]}))
    assert unanswered.ok == frozenset() and unanswered.at - first.at == 1.0


async def test_a_short_soak_keeps_every_invariant_and_writes_its_results_file(tmp_path: Path) -> None:
    results = tmp_path / "soak.json"
    soak = (str(BENCHMARKS / "crash_soak.py"), "--cycles", "3", "--settle", "60")
    process = await asyncio.create_subprocess_exec(
        *(sys.executable, *soak, "--output", "json", "--results", str(results)),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=240)
    assert process.returncode == 0, err.decode()[-2000:]
    run = json.loads(out)["run"]
    assert sum(run["kills"].values()) >= 3 and run["pods_created"] > 0
    assert run["verdict"]["prepare_calls"] > 0 and run["settled"]
    written = json.loads(results.read_text())
    assert written["held"] and written["command"].endswith(f"--results {results}")
    rows = {name: value for name, value, _held in written["rows"]}
    assert rows["cycles (seed)"] == "3 (1)" and rows["lost claims"] == "0"
    table = subprocess.run(
        [sys.executable, soak[0], "--markdown", str(results)], capture_output=True, text=True, check=True
    ).stdout
    assert "| lost claims | 0 | held |" in table and table.startswith(f"`{written['command']}` on ")
