"""``kubelet-dra driver`` as a real process: environment flags, the fault CLI, signals, restarts, bad input."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from pathlib import Path

import grpc
import pytest
from driver_support import Env, claim_ref, create_claim, get_info, notify, prepare, unprepare

from kubelet_dra.peers.api import dra_v1_pb2 as v1
from kubelet_dra.peers.kube.client import KubeClient

START_TIMEOUT = 20.0


def flags(env: Env, *extra: str) -> list[str]:
    return [
        "--driver-name",
        env.driver,
        "--node-name",
        env.node,
        "--kubeconfig",
        str(env.apiserver.kubeconfig),
        "--registry-dir",
        str(env.registry_dir),
        "--plugin-dir",
        str(env.plugin_dir(env.driver)),
        "--cdi-root",
        str(env.cdi_root),
        *extra,
    ]


async def started(env: Env, process: subprocess.Popen[str]) -> Path:
    """Wait for the registration socket; the service socket must already serve when it appears."""
    socket = env.registry_dir / f"{env.driver}-reg.sock"
    deadline = time.monotonic() + START_TIMEOUT
    while not socket.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"driver did not start: {process.communicate()[1]}")
        await asyncio.sleep(0.01)
    assert await prepare(env.plugin_dir(env.driver) / "dra.sock", [], timeout=2) == v1.NodePrepareResourcesResponse()
    return socket


def stop(process: subprocess.Popen[str]) -> tuple[int, str]:
    process.send_signal(signal.SIGTERM)
    _, stderr = process.communicate(timeout=10)
    return process.returncode, stderr


async def test_environment_flags_fault_cli_and_sigterm(env: Env) -> None:
    plugin_dir = env.plugin_dir(env.driver)
    process = env.process(
        env={
            "KUBELET_DRA_DRIVER_NAME": env.driver,
            "KUBELET_DRA_NODE_NAME": env.node,
            "KUBELET_DRA_KUBECONFIG": str(env.apiserver.kubeconfig),
            "KUBELET_DRA_REGISTRY_DIR": str(env.registry_dir),
            "KUBELET_DRA_PLUGIN_DIR": str(plugin_dir),
            "KUBELET_DRA_CDI_ROOT": str(env.cdi_root),
            "KUBELET_DRA_HEALTH": "true",
        }
    )
    try:
        socket = await started(env, process)
        info = await get_info(socket)
        assert info.name == env.driver and info.supported_versions[-1] == "v1alpha1.DRAResourceHealth"

        done = env.cli("driver", "fault", "--plugin-dir", str(plugin_dir), "set", "prepare-error=out of order")
        assert done.returncode == 0, done.stderr
        assert "prepare-error=out of order" in done.stdout
        with pytest.raises(grpc.aio.AioRpcError, match="prepare resource claims: out of order"):
            await prepare(plugin_dir / "dra.sock", [])
        got = env.cli("--output", "json", "driver", "fault", "--plugin-dir", str(plugin_dir), "get")
        assert json.loads(got.stdout) == {"prepare-error": "out of order"}
        assert env.cli("driver", "fault", "--plugin-dir", str(plugin_dir), "clear").returncode == 0
        assert await prepare(plugin_dir / "dra.sock", []) == v1.NodePrepareResourcesResponse()

        bad = env.cli("driver", "fault", "--plugin-dir", str(plugin_dir), "set", "prepare-eror=x")
        assert bad.returncode == 2 and "unknown fault knob 'prepare-eror'" in bad.stderr

        health = env.cli("driver", "health", "--plugin-dir", str(plugin_dir), "device-3=Unhealthy", "--message", "hot")
        assert health.returncode == 0 and "device-3=Unhealthy" in health.stdout
        status = env.cli("--output", "json", "driver", "status", "--plugin-dir", str(plugin_dir))
        assert json.loads(status.stdout)["driver"] == env.driver
    finally:
        code, stderr = stop(process)
    assert code == 0, stderr
    assert "driver stopped" in stderr
    assert not socket.exists()
    assert not (plugin_dir / "dra.sock").exists()


async def test_restarted_driver_remembers_and_unprepares_what_it_prepared(env: Env, kube: KubeClient) -> None:
    config = env.root / "driver.yaml"
    config.write_text("maxAllocations: 1\n")
    first, second = [
        await create_claim(kube, driver=env.driver, pool=env.node, devices=(d,)) for d in ("device-0", "device-1")
    ]
    service = env.plugin_dir(env.driver) / "dra.sock"
    spec = env.cdi_root / f"k8s.{env.driver}-device_{first['metadata']['uid']}.json"

    process = env.process(*flags(env, "--config", str(config)))
    try:
        await started(env, process)
        assert (await prepare(service, [claim_ref(first)])).claims[first["metadata"]["uid"]].error == ""
    finally:
        assert stop(process)[0] == 0
    assert spec.exists()

    process = env.process(*flags(env, "--config", str(config)))
    try:
        await started(env, process)
        refused = await prepare(service, [claim_ref(second)])
        assert "maximum of 1 prepared claims" in refused.claims[second["metadata"]["uid"]].error
        done = await unprepare(service, [claim_ref(first)])
        assert done.claims[first["metadata"]["uid"]].error == ""
        assert not spec.exists()
        assert (await prepare(service, [claim_ref(second)])).claims[second["metadata"]["uid"]].error == ""
    finally:
        assert stop(process)[0] == 0


async def test_exit_after_registration_leaving_sockets_behind(env: Env) -> None:
    process = env.process(*flags(env, "--fault-exit-after-registration", "--fault-leave-sockets=true"))
    socket = await started(env, process)
    await notify(socket, True)
    assert process.wait(timeout=10) == 0
    assert socket.exists(), "a crashed driver leaves its registration socket"
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await get_info(socket)
    assert caught.value.code() == grpc.StatusCode.UNAVAILABLE


@pytest.mark.parametrize(
    ("extra", "environment", "message"),
    [
        (["--config", "CONFIG"], {}, "sharing: unknown value 'always' (fix: use one of exclusive, shared)"),
        ([], {"KUBELET_DRA_DEVICES": "many"}, "argument --devices: invalid int value: 'many'"),
        (["--fault-versions", "v9"], {}, "bad value 'v9' for fault knob versions"),
        (["--registry-dir", "/nonexistent/registry"], {}, "plugin registry directory does not exist"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(
    env: Env, extra: list[str], environment: dict[str, str], message: str
) -> None:
    config = env.root / "bad.yaml"
    config.write_text("sharing: always\n")
    args = [str(config) if arg == "CONFIG" else arg for arg in extra]
    process = env.process(*flags(env), *args, env=environment)
    _, stderr = process.communicate(timeout=20)
    assert process.returncode == 2
    assert message in stderr


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--node-name", "a"], "--node-name names one node, and --nodes many"),
        (["--registry-dir", "REG"], "--registry-dir must hold {node} when the driver serves many nodes"),
        (["--registry-dir", "REG/{node}", "--plugin-dir", "/p"], "--plugin-dir must hold {node}"),
        (["--registry-dir", "REG/{node}", "--plugin-dir", "/p/{node}"], "--cdi-root must hold {node}"),
    ],
)
def test_many_nodes_in_one_driver_process_need_a_dir_of_their_own_each(
    env: Env, extra: list[str], message: str
) -> None:
    args = [arg.replace("REG", str(env.registry_dir)) for arg in extra]
    process = env.process("--driver-name", env.driver, "--nodes", "a,b", *args)
    _, stderr = process.communicate(timeout=20)
    assert process.returncode == 2
    assert message in stderr and "Traceback" not in stderr, stderr
