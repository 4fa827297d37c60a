"""``kubelet-dra run`` runs the pods bound to its node, with the checkpoint in the kubelet's root dir by default."""

from __future__ import annotations

import json

from conftest import Cluster
from helpers import KubeletDRAProcess, eventually


async def test_run_prepares_runs_and_finishes_deleted_pods(cluster: Cluster) -> None:
    registry = cluster.root / "reg"
    run = await KubeletDRAProcess.start(
        *("run", "--node-name", cluster.node_name, "--registry-dir", str(registry)),
        *("--kubeconfig", str(cluster.kubeconfig), "--reconcile-period", "5", "--pod-retry-period", "0.2"),
    )
    try:
        await run.wait_line("Plugin Watcher Start")
        await cluster.spawn_driver()
        await run.wait_line('msg="Registered DRA plugin"')
        pod = await cluster.pod_with_claim()

        async def running() -> bool:
            return ((await cluster.get_pod(pod) or {}).get("status") or {}).get("phase") == "Running"

        assert await eventually(running, timeout=10), run.lines
        checkpoint = json.loads((cluster.root / "dra_manager_state").read_text())
        assert pod["metadata"]["uid"] in json.dumps(checkpoint)
        await run.wait_line("Starting container.*cdiDevices")

        await cluster.delete_pod(pod)

        async def deleted() -> bool:
            return await cluster.get_pod(pod) is None

        assert await eventually(deleted, timeout=10)
        assert pod["metadata"]["uid"] not in (cluster.root / "dra_manager_state").read_text()
    finally:
        code = await run.stop()
    assert code == 0
    assert not any("Traceback" in line for line in run.lines), run.lines


async def test_run_rejects_a_reconcile_period_that_is_not_positive(cluster: Cluster) -> None:
    run = await KubeletDRAProcess.start(
        *("run", "--node-name", cluster.node_name, "--registry-dir", str(cluster.root / "reg")),
        *("--kubeconfig", str(cluster.kubeconfig), "--reconcile-period", "0"),
    )
    assert await run.wait() != 0
    assert any("--reconcile-period" in line for line in run.lines), run.lines
