"""``kubelet-dra call`` as users run it: one call by hand against the reference driver's real sockets, the
session's API server holding the claims, exit codes 0/1/2 and 64 + gRPC code, and no traceback."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from helpers import kubelet_dra
from nodeenv import GPU, NAMESPACE, NIC, NodeEnv

V1_PREPARE = "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources"


@pytest.fixture
def env(env: NodeEnv) -> NodeEnv:
    """A node's directories with no kubelet: the drivers register nowhere, only calls by hand reach them."""
    env.registry.mkdir()
    return env


def sockets(env: NodeEnv, driver: str = GPU) -> tuple[str, str]:
    """(registration socket, service socket) of a driver ``env.spawn_driver`` started."""
    return str(env.registry / f"{driver}-reg.sock"), str(env.root / f"p-{driver.split('.')[0]}" / "dra.sock")


def claim_specs(env: NodeEnv, uid: str) -> list[Path]:
    """The CDI spec files the driver wrote for one claim."""
    return sorted((env.root / "cdi").glob(f"*{uid}*"))


async def test_info_prepare_and_unprepare_by_hand(env: NodeEnv):
    await env.spawn_driver()
    registration, service = sockets(env)
    claim = await env.claim()
    name, uid = claim["metadata"]["name"], claim["metadata"]["uid"]

    code, out, err = await kubelet_dra("call", registration, "info", "--output", "json")
    assert (code, err) == (0, "")
    info = json.loads(out)
    assert info["verdict"] == ""
    assert f"the kubelet would register {GPU} and call v1.DRAPlugin at {service}" in info["notes"]
    assert info["calls"][0]["response"]["type"] == "DRAPlugin"

    code, out, _ = await kubelet_dra("call", registration, "notify", "--data", '{"plugin_registered": false}')
    assert code == 64 + 2, out
    assert "the kubelet only logs it" in out, "the helper's error answer to a rejection is explained"

    # By name: the UID comes from the API server; the call goes where GetInfo points.
    code, out, err = await kubelet_dra(
        "call", registration, "prepare", "--claim", f"{NAMESPACE}/{name}", "--kubeconfig", str(env.kubeconfig)
    )
    assert (code, err) == (0, ""), out
    assert "the kubelet picks v1.DRAPlugin" in out
    assert f"request 2 {V1_PREPARE} → OK" in out
    assert f"claim {uid}: {env.node_name}/device-0 requests gpu: k8s.{GPU}/device=" in out
    assert "✓ the kubelet would accept this answer" in out
    assert claim_specs(env, uid), "the driver really prepared: its CDI spec file is written"

    # Straight to the service socket, with the UID given: no API server needed.
    code, out, err = await kubelet_dra("call", service, "unprepare", "--claim", f"{NAMESPACE}/{name}/{uid}")
    assert (code, err) == (0, ""), out
    assert "route: service socket (no GetInfo), v1.DRAPlugin" in out
    assert f"claim {uid}: unprepared" in out
    assert not claim_specs(env, uid), "the driver really unprepared: its CDI spec file is gone"


async def test_per_claim_errors_and_a_slow_driver_are_judged_like_the_kubelet(env: NodeEnv):
    driver = await env.spawn_driver()
    registration, _ = sockets(env)
    claim = await env.claim()
    name, uid = claim["metadata"]["name"], claim["metadata"]["uid"]
    await driver.fault("set", f"prepare-fail-claim={name}", "getinfo-type=CSIPlugin")

    code, out, _ = await kubelet_dra("call", registration, "info")
    assert code == 1, out
    # a CSIPlugin goes to the real kubelet's CSI handler, which cannot parse a DRA service name as a CSI version
    assert "✗ plugin validation failed with err: validation failed for CSI Driver" in out
    assert "(the type must be exactly 'DRAPlugin')" in out
    code, out, _ = await kubelet_dra("call", registration, "prepare", "--claim", f"{NAMESPACE}/{name}/{uid}")
    assert code == 1, out
    assert "✗ the kubelet rejects this driver, so it never makes the call: plugin validation failed" in out
    await driver.fault("clear", "getinfo-type")

    code, out, _ = await kubelet_dra("call", registration, "prepare", "--claim", f"{NAMESPACE}/{name}/{uid}")
    assert code == 1, out
    assert f"claim {uid}: error: " in out
    assert f"✗ the kubelet fails the pod: NodePrepareResources failed for ResourceClaim {name}: " in out

    await driver.fault("set", "prepare-block=true")
    code, out, err = await kubelet_dra(
        "call", registration, "prepare", "--claim", f"{NAMESPACE}/{name}/{uid}", "--timeout", "0.5", "--output", "json"
    )
    assert (code, err) == (64 + 4, "")
    result = json.loads(out)
    assert result["status"] == "DEADLINE_EXCEEDED"
    assert result["error"] == "rpc error: code = DeadlineExceeded desc = context deadline exceeded"
    assert "no answer within 0.5 s: the kubelet gives up at the same deadline" in result["notes"]
    assert [call["request_id"] for call in result["calls"]] == [1, 2], "every call has its request ID"


async def test_the_health_stream_is_followed_and_its_absence_explained(env: NodeEnv):
    await env.spawn_driver(GPU, "--health", "--devices", "2")
    await env.spawn_driver(NIC)

    code, out, err = await kubelet_dra("call", sockets(env, GPU)[0], "watch", "--for", "1.5")
    assert (code, err) == (0, ""), out
    assert f"health: {env.node_name}/device-0 HEALTHY, {env.node_name}/device-1 HEALTHY" in out
    assert "the stream was still open" in out

    code, out, _ = await kubelet_dra("call", sockets(env, NIC)[0], "watch", "--for", "1.5")
    assert code == 64 + 12, out
    assert "v1alpha1.DRAResourceHealth is not served: health is optional; a 1.36 kubelet only logs it (F13)" in out
    assert "never asks a driver that does not advertise it" in out


async def test_service_versions_are_negotiated_like_the_kubelet(env: NodeEnv):
    await env.spawn_driver(GPU, "--fault-versions", "v1beta1")
    await env.spawn_driver(NIC, "--fault-versions", "1.0.0")
    claim = f"{NAMESPACE}/any/0b1c4f36-0000-4000-8000-000000000000"

    code, out, _ = await kubelet_dra("call", sockets(env, GPU)[0], "unprepare", "--claim", claim, "--output", "json")
    assert code == 0, out
    result = json.loads(out)
    assert result["route"].endswith("the kubelet picks v1beta1.DRAPlugin")
    assert result["calls"][-1]["method"] == "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources"

    code, out, _ = await kubelet_dra("call", sockets(env, NIC)[0], "unprepare", "--claim", claim, "--output", "json")
    assert code == 1, out
    result = json.loads(out)
    assert result["verdict"].startswith("the kubelet rejects this driver, so it never makes the call: none of services")
    assert [call["method"] for call in result["calls"]] == ["/pluginregistration.Registration/GetInfo"]


async def test_a_stale_socket_and_bad_input_get_clear_answers(tmp_path: Path):
    stale = tmp_path / "gone.example.com-reg.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(stale))
    listener.close()  # the file stays, nothing listens: a driver that crashed

    code, out, err = await kubelet_dra("call", str(stale), "info")
    assert code == 64 + 14, out
    assert "connection refused: no process listens on the socket" in out
    assert "Traceback" not in err

    for args, message in (
        (("frobnicate",), "unknown method 'frobnicate'"),
        (("prepare",), "NodePrepareResources needs claims"),
        (("prepare", "--claim", "just-a-name"), "--claim 'just-a-name' is not NAMESPACE/NAME"),
        (("prepare", "--data", "{claims: 1}"), "--data: not a NodePrepareResourcesRequest in JSON"),
        (("prepare", "--data", '{"claims": []}', "--service", "v2.DRAPlugin"), "--service 'v2.DRAPlugin'"),
    ):
        code, out, err = await kubelet_dra("call", str(stale), *args)
        assert (code, out) == (2, ""), err
        assert message in err and "(fix: " in err and "Traceback" not in err
