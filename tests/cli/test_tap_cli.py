"""``kubelet-dra tap`` and ``kubelet-dra calls diff`` as a user runs them: real processes, real sockets."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
from pathlib import Path

import pytest
from helpers import eventually, kubelet_dra
from nodeenv import GPU, NodeEnv


async def test_the_tap_stopped_by_sigterm_prints_its_drivers_and_calls_as_json(env: NodeEnv) -> None:
    drivers = env.root / "drv"
    record = env.root / "calls.jsonl"
    async with env.node() as node:
        tap = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "kubelet_dra", "--output", "json", "tap"),
            *("--driver-registry-dir", str(drivers), "--registry-dir", str(env.registry)),
            *("--record-calls", str(record)),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert await eventually(drivers.is_dir, timeout=30), "the tap makes the drivers' dir"
        await env.spawn_driver(GPU, "--registry-dir", str(drivers))
        await node.wait_for(lambda: node.plugins.usable(GPU), timeout=30)
        tap.send_signal(signal.SIGTERM)
        out, err = await asyncio.wait_for(tap.communicate(), 30)
    assert (tap.returncode, err) == (0, b"")
    report = json.loads(out)
    (driver,) = report["drivers"]
    assert driver["driver"] == GPU and driver["mirror_socket"] == str(env.registry / f"{GPU}-reg.sock")
    methods = [call["method"].rsplit("/", 1)[-1] for call in report["calls"]]
    assert methods[:2] == ["GetInfo", "NotifyRegistrationStatus"]
    assert [json.loads(line) for line in record.read_text().splitlines()] == report["calls"]
    assert not list(env.registry.glob("*.sock")), "the mirrored socket went with the tap"


async def test_a_kubelet_registry_dir_that_does_not_exist_is_refused_in_one_line(short_dir: Path) -> None:
    code, _, err = await kubelet_dra(
        "tap", "--driver-registry-dir", str(short_dir / "drivers"), "--registry-dir", str(short_dir / "no-such-dir")
    )
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "no-such-dir" in err and "does not exist" in err


async def test_a_driver_dir_inside_the_kubelet_s_is_refused_in_one_line(short_dir: Path) -> None:
    (short_dir / "reg").mkdir()
    code, _, err = await kubelet_dra(
        "tap", "--driver-registry-dir", str(short_dir / "reg" / "drivers"), "--registry-dir", str(short_dir / "reg")
    )
    assert code == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "--driver-registry-dir" in err and "overlap" in err


def call(method: str, started: float, uid: str, name: str, status: str = "OK") -> dict[str, object]:
    claims = [{"name": name, "namespace": "default", "uid": uid}]
    return {
        "request_id": int(started),
        "driver": GPU,
        "endpoint": f"/tmp/{uid[:4]}/dra.sock",
        "method": f"/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/{method}",
        "streaming": False,
        "request": {"claims": claims},
        "response": {"claims": {uid: {"error": ""}}} if status == "OK" else None,
        "status": status,
        "details": "",
        "started_at": started,
        "duration": 0.01,
    }


def write(path: Path, *records: dict[str, object]) -> str:
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return str(path)


async def test_recordings_of_the_same_calls_with_other_uids_names_and_times_are_the_same(tmp_path: Path) -> None:
    one = "11111111-1111-1111-1111-111111111111"
    two = "22222222-2222-2222-2222-222222222222"
    a = write(tmp_path / "a.jsonl", call("NodePrepareResources", 10, one, "pod-gpu-abcde"))
    b = write(tmp_path / "b.jsonl", call("NodePrepareResources", 500, two, "pod-gpu-xyz12"))
    code, out, err = await kubelet_dra("calls", "diff", a, b)
    assert (code, err) == (0, "")
    summary, line = out.splitlines()
    assert summary == "same calls: 1 line(s) after normalizing"
    assert line.split()[:2] == ["DRAPlugin/NodePrepareResources", "OK"] and "<uid-1>" in line and "<claim-1>" in line


def handshake(start: float, watch_after: float, notify_after: float, driver: str = GPU) -> list[dict[str, object]]:
    """A registration as a recorder writes it: GetInfo, then the health stream and the notify the kubelet sends."""
    get_info = {**call("x", start, "", ""), "method": "/pluginregistration.Registration/GetInfo"}
    watch = {**call("x", start + watch_after, "", ""), "method": "/v1alpha1.DRAResourceHealth/NodeWatchResources"}
    notify = {
        **call("x", start + notify_after, "", ""),
        "method": "/pluginregistration.Registration/NotifyRegistrationStatus",
    }
    return [{**record, "driver": driver, "request": {}, "response": {}} for record in (get_info, watch, notify)]


async def test_a_kubelets_calls_on_a_driver_compare_kind_by_kind_whatever_the_gaps_between_them(
    tmp_path: Path,
) -> None:
    """The node calls a driver it has just registered while its notify is out; through the tap beside it, under
    load, the prepare arrived half a second after the handshake: the same calls (seen with a tap beside the node)."""
    uid = "11111111-1111-1111-1111-111111111111"
    node = write(tmp_path / "node.jsonl", *handshake(1.0, 0.03, 0.04), call("NodePrepareResources", 1.02, uid, "c"))
    tap = write(tmp_path / "tap.jsonl", *handshake(1.0, 0.09, 0.1), call("NodePrepareResources", 1.5, uid, "c"))
    code, out, err = await kubelet_dra("calls", "diff", node, tap)
    assert (code, err) == (0, ""), out
    assert [line.split()[0] for line in out.splitlines()[1:]] == [
        "Registration/GetInfo",
        "Registration/NotifyRegistrationStatus",
        "DRAPlugin/NodePrepareResources",
        "DRAResourceHealth/NodeWatchResources",
    ]


async def test_two_drivers_calls_are_listed_driver_by_driver_each_line_led_by_its_name(tmp_path: Path) -> None:
    """Which of two drivers a kubelet registers first is chance; a call's driver is part of what must match."""
    other = "net.example.com"
    a = write(tmp_path / "a.jsonl", *handshake(1.0, 0.1, 0.2, driver=other), *handshake(2.0, 0.1, 0.2))
    b = write(tmp_path / "b.jsonl", *handshake(1.0, 0.1, 0.2), *handshake(2.0, 0.1, 0.2, driver=other))
    code, out, _ = await kubelet_dra("calls", "diff", a, b)
    assert code == 0, out
    assert [line.split()[:2] for line in out.splitlines()[1:]] == [
        [f"{GPU}:", "Registration/GetInfo"],
        [f"{GPU}:", "Registration/NotifyRegistrationStatus"],
        [f"{GPU}:", "DRAResourceHealth/NodeWatchResources"],
        [f"{other}:", "Registration/GetInfo"],
        [f"{other}:", "Registration/NotifyRegistrationStatus"],
        [f"{other}:", "DRAResourceHealth/NodeWatchResources"],
    ]
    swapped = write(tmp_path / "c.jsonl", *handshake(1.0, 0.1, 0.2), *handshake(2.0, 0.1, 0.2))
    code, out, _ = await kubelet_dra("calls", "diff", a, swapped)
    assert code == 1, "the other driver's handshake made to this one is a difference"


async def test_a_different_call_is_shown_as_a_unified_diff_and_exits_1(tmp_path: Path) -> None:
    uid = "11111111-1111-1111-1111-111111111111"
    a = write(
        tmp_path / "a.jsonl", call("NodePrepareResources", 1, uid, "c"), call("NodeUnprepareResources", 2, uid, "c")
    )
    b = write(tmp_path / "b.jsonl", call("NodePrepareResources", 1, uid, "c", status="UNAVAILABLE"))
    code, out, _ = await kubelet_dra("calls", "diff", a, b)
    assert code == 1
    changed = [line for line in out.splitlines() if line[:1] in "+-" and line[:3] not in ("+++", "---")]
    assert [line.split()[:2] for line in changed] == [
        ["-DRAPlugin/NodePrepareResources", "OK"],
        ["-DRAPlugin/NodeUnprepareResources", "OK"],
        ["+DRAPlugin/NodePrepareResources", "UNAVAILABLE"],
    ]
    code, out, _ = await kubelet_dra("calls", "diff", a, b, "--output", "json")
    assert code == 1 and json.loads(out)["same"] is False


async def test_a_file_that_is_not_a_recording_is_named_with_its_line(tmp_path: Path) -> None:
    good = write(tmp_path / "good.jsonl", call("NodePrepareResources", 1, "u", "c"))
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps(call("NodePrepareResources", 1, "u", "c")) + "\n{not json\n")
    code, _, err = await kubelet_dra("calls", "diff", good, str(bad))
    assert code == 2 and f"{bad}:2" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (json.dumps({**call("NodePrepareResources", 1, "u", "c"), "started_at": "1"}).encode(), 'started_at is "1"'),
        (json.dumps({**call("NodePrepareResources", 1, "u", "c"), "method": 5}).encode(), "method is 5, not a string"),
        (json.dumps({**call("NodePrepareResources", 1, "u", "c"), "duration": [1]}).encode(), "duration is [1]"),
        (json.dumps({**call("NodePrepareResources", 1, "u", "c"), "details": {}}).encode(), "details is {}"),
        (json.dumps(call("NodePrepareResources", 1, "u", "c")).encode()[:-1] + b', "x": "\xff"}', "not UTF-8 text"),
        (b"[" * 100_000, "nested too deep"),
    ],
)
async def test_a_record_of_the_wrong_shape_is_named_with_its_line(tmp_path: Path, line: bytes, message: str) -> None:
    good = write(tmp_path / "good.jsonl", call("NodePrepareResources", 1, "u", "c"))
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(json.dumps(call("NodePrepareResources", 1, "u", "c")).encode() + b"\n" + line + b"\n")
    code, _, err = await kubelet_dra("calls", "diff", good, str(bad))
    assert code == 2 and f"{bad}:2: {message}" in err, err[-600:]
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err[-600:]
