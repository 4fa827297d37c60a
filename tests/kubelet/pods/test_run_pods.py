"""``kubelet-dra run`` runs the pods bound to its node, with the checkpoint in the kubelet's root dir by default."""

from __future__ import annotations

import json
import signal
import socket

import aiohttp
from helpers import KubeletDRAProcess, eventually
from nodeenv import NodeEnv
from prometheus_client.parser import text_string_to_metric_families


async def test_run_prepares_runs_and_finishes_deleted_pods(env: NodeEnv) -> None:
    registry = env.registry
    run = await KubeletDRAProcess.start(
        *("run", "--node-name", env.node_name, "--registry-dir", str(registry)),
        *(
            "--kubeconfig",
            str(env.kubeconfig),
            "--reconcile-period",
            "5",
            "--pod-back-off-period",
            "0.2",
            "--sync-frequency",
            "0.2",
        ),
    )
    try:
        await run.wait_line("Plugin Watcher Start")
        await env.spawn_driver()
        await run.wait_line('msg="Registered DRA plugin"')
        pod = await env.pod_with_claim()

        async def running() -> bool:
            return ((await env.get_pod(pod) or {}).get("status") or {}).get("phase") == "Running"

        assert await eventually(running, timeout=10), run.lines
        checkpoint = json.loads((env.root / "dra_manager_state").read_text())
        assert pod["metadata"]["uid"] in json.dumps(checkpoint)
        await run.wait_line("Starting container.*cdiDevices")

        await env.delete_pod(pod)

        async def deleted() -> bool:
            return await env.get_pod(pod) is None

        assert await eventually(deleted, timeout=10)
        assert pod["metadata"]["uid"] not in (env.root / "dra_manager_state").read_text()
    finally:
        code = await run.stop()
    assert code == 0
    assert not any("Traceback" in line for line in run.lines), run.lines


async def test_run_killed_after_the_checkpoint_unprepares_through_the_driver_when_started_again(env: NodeEnv) -> None:
    """SIGKILL after prepare; the pod is deleted while the node is down; the next ``run`` on the same root dir
    reads the checkpoint, unprepares the claim through the driver (its CDI spec goes) and finishes the pod."""
    flags = ("run", "--node-name", env.node_name, "--registry-dir", str(env.registry), "--kubeconfig")
    flags += (str(env.kubeconfig), "--pod-back-off-period", "0.2", "--sync-frequency", "0.2")
    first = await KubeletDRAProcess.start(*flags)
    await first.wait_line("Plugin Watcher Start")
    await env.spawn_driver()
    pod = await env.pod_with_claim()
    await first.wait_line('msg="Prepared dynamic resources"')
    cdi_specs = list((env.root / "cdi").glob("*device_[0-9a-f]*-*.json"))
    assert len(cdi_specs) == 1, cdi_specs
    first.proc.kill()
    assert await first.wait() == -signal.SIGKILL

    await env.delete_pod(pod)
    assert await env.get_pod(pod) is not None, "a bound pod waits for its node to finish the deletion"
    second = await KubeletDRAProcess.start(*flags)
    try:
        await second.wait_line('msg="Unprepared dynamic resources"')

        async def deleted() -> bool:
            return await env.get_pod(pod) is None

        assert await eventually(deleted, timeout=10), second.lines
        assert not cdi_specs[0].exists(), "the driver was not asked to unprepare the claim"
        assert pod["metadata"]["uid"] not in (env.root / "dra_manager_state").read_text()
    finally:
        assert await second.stop() == 0


async def test_run_rejects_a_reconcile_period_that_is_not_positive(env: NodeEnv) -> None:
    run = await KubeletDRAProcess.start(
        *("run", "--node-name", env.node_name, "--registry-dir", str(env.registry)),
        *("--kubeconfig", str(env.kubeconfig), "--reconcile-period", "0"),
    )
    assert await run.wait() != 0
    assert any("--reconcile-period" in line for line in run.lines), run.lines


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_run_serves_the_dra_metrics(env: NodeEnv) -> None:
    port = free_port()
    run = await KubeletDRAProcess.start(
        *("run", "--node-name", env.node_name, "--registry-dir", str(env.registry)),
        *(
            "--kubeconfig",
            str(env.kubeconfig),
            "--pod-back-off-period",
            "0.2",
            "--sync-frequency",
            "0.2",
            "--metrics-port",
            str(port),
        ),
    )
    try:
        await run.wait_line("Serving metrics")
        await env.spawn_driver()
        pod = await env.pod_with_claim()

        async def scrape() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
            async with aiohttp.ClientSession() as session, session.get(f"http://127.0.0.1:{port}/metrics") as answer:
                text = await answer.text()
            return {
                (sample.name, tuple(sorted(sample.labels.items()))): sample.value
                for family in text_string_to_metric_families(text)
                for sample in family.samples
            }

        async def prepared() -> dict[tuple[str, tuple[tuple[str, str], ...]], float] | None:
            metrics = await scrape()
            return metrics if metrics.get(("dra_resource_claims_in_use", (("driver_name", "<any>"),))) == 1 else None

        metrics = await eventually(prepared, timeout=15)
        assert metrics, run.lines
        key = ("dra_operations_duration_seconds_count", (("is_error", "false"), ("operation_name", "PrepareResources")))
        assert metrics[key] == 1
        assert metrics[("dra_resource_claims_in_use", (("driver_name", "gpu.example.com"),))] == 1
        await env.delete_pod(pod)
    finally:
        code = await run.stop()
    assert code == 0


async def test_run_with_a_busy_metrics_port_says_which_flag_to_change(env: NodeEnv) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        run = await KubeletDRAProcess.start(
            *("run", "--node-name", env.node_name, "--registry-dir", str(env.registry)),
            *("--kubeconfig", str(env.kubeconfig), "--metrics-port", str(busy.getsockname()[1])),
        )
        assert await run.wait() == 2
    assert any("--metrics-port" in line for line in run.lines), run.lines
    assert not any("Traceback" in line for line in run.lines), run.lines
