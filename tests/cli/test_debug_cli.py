"""``kubelet-dra debug`` and ``kubelet-dra explain`` as users run them: real subprocesses, the reference driver,
the session's API server standing in for a real cluster, exit codes 0/1/2 and no traceback."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from helpers import eventually, kubelet_dra
from nodeenv import NodeEnv

from kubelet_dra.peers.kube.client import api_path

SLICES = api_path("resource.k8s.io", "v1", "resourceslices")


async def test_against_a_real_cluster_a_rejected_driver_is_diagnosed_and_no_slice_is_deleted(env: NodeEnv) -> None:
    ghost = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": f"ghost-{env.node_name}"},
        "spec": {
            "driver": "ghost.example.com",
            "nodeName": env.node_name,
            "pool": {"name": env.node_name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": "dev-0"}],
        },
    }
    await env.kube.request("POST", SLICES, body=ghost)
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": env.node_name}}
    await env.kube.request("POST", api_path("", "v1", "nodes"), body=node)  # the real kubelet registered it
    env.registry.mkdir()  # and made its registry dir long ago
    await env.spawn_driver("gpu.example.com", "--fault-getinfo-type", "CSIPlugin")

    code, out, err = await kubelet_dra(
        *("debug", "--registry-dir", str(env.registry), "--node-name", env.node_name),
        *("--kubeconfig", str(env.kubeconfig), "--for", "3", "--output", "json"),
    )
    assert code == 1, err
    assert "Traceback" not in err
    report = json.loads(out)
    assert report["dryRunWipes"] is True
    modes = {(problem["mode"], problem["subject"]) for problem in report["problems"]}
    assert ("F4", str(env.registry / "gpu.example.com-reg.sock")) in modes
    assert ("F12", "ghost.example.com") in modes
    links = {problem["mode"]: problem["link"] for problem in report["problems"]}
    assert links["F12"] == "docs/kubelet-messages.md#f12-not-registered"  # the entry explain uses for it
    assert not any(problem["mode"] == "setup" for problem in report["problems"]), report["problems"]
    assert any(event["text"].startswith("would delete") for event in report["events"])
    remaining = await env.kube.request("GET", SLICES, query={"fieldSelector": f"spec.nodeName={env.node_name}"})
    assert f"ghost-{env.node_name}" in {item["metadata"]["name"] for item in remaining["items"]}


async def test_with_the_embedded_api_server_a_healthy_driver_streams_its_registration_and_exits_0(
    env: NodeEnv,
) -> None:
    kubeconfig = env.root / "debug.kubeconfig"
    debug = asyncio.create_task(
        kubelet_dra(
            *("debug", "--registry-dir", str(env.registry), "--node-name", env.node_name),
            *("--kubeconfig-out", str(kubeconfig), "--for", "8"),
        )
    )
    assert await eventually(kubeconfig.exists, timeout=15), "the embedded API server wrote no kubeconfig"
    env.kubeconfig = kubeconfig  # the driver talks to the debugger's API server, as its log tells users to
    await env.spawn_driver()
    code, out, err = await debug
    assert code == 0, out + err
    assert "Traceback" not in err
    assert f"registered DRA driver gpu.example.com with endpoint {env.root}/p-gpu/dra.sock" in out
    assert "No problem found" in out
    assert "ResourceSlices: deleted at start" in out


async def test_a_bad_watch_time_is_a_usage_error_naming_the_flag() -> None:
    code, out, err = await kubelet_dra("debug", "--registry-dir", "/tmp/nowhere", "--for", "0")
    assert (code, out) == (2, "")
    assert "--for" in err and "Traceback" not in err


async def test_explain_names_the_failure_mode_of_a_pasted_message() -> None:
    message = (
        "RegisterPlugin error -- failed to send error at socket /var/lib/kubelet/plugins_registry/gpu-reg.sock,"
        " err: RegisterPlugin error -- plugin validation failed with err: invalid supported gRPC versions of DRA"
        " driver plugin gpu.example.com at endpoint /var/lib/kubelet/plugins/gpu/dra.sock: none of services"
        ' supported by the plugin (["1.0.0"]) are supported by the kubelet'
    )
    code, out, _ = await kubelet_dra("--output", "json", "explain", message)
    assert code == 0
    (explained,) = json.loads(out)
    assert explained["mode"] == "F6"
    assert "v1.DRAPlugin" in explained["fix"]
    assert explained["note"].startswith('"failed to send error" does not mean the notification failed')


async def test_explain_reads_a_log_from_stdin_and_skips_what_it_does_not_know() -> None:
    log = "\n".join(
        (
            'I1124 10:00:00 reconciler.go:100] "Starting operationExecutor.RegisterPlugin"',
            'E1124 10:00:01 manager.go:200] "Error receiving from WatchResources stream" err="Unimplemented"',
            "E1124 10:00:02 pod_workers.go:1324] unprepare dynamic resources: NodeUnprepareResources failed",
        )
    )
    code, out, _ = await kubelet_dra("--output", "json", "explain", stdin=log)
    assert code == 0
    assert [(item["line"], item["mode"]) for item in json.loads(out)] == [(2, "F13"), (3, "F15")]
    code, out, err = await kubelet_dra("explain", stdin="nothing to see\n")
    assert (code, err) == (1, "")
    assert out.startswith("No kubelet DRA line in the 1 line(s) read.") and "kubelet-dra debug" in out


async def test_explain_shows_an_unknown_dra_line_with_its_source_and_a_next_step() -> None:
    log = "\n".join(
        (
            'E1127 10:02:11.120001     512 dra_plugin_manager.go:512] "Something the catalogue has never seen"',
            'I1127 10:02:11.120001     512 dra_plugin_manager.go:300] "An info line nobody needs explained"',
            'E1127 10:02:12.120001     512 kuberuntime_manager.go:1594] "Failed to prepare dynamic resources"'
            ' err="prepare dynamic resources: DRA driver gpu.example.com is not registered" pod="default/demo"',
        )
    )
    code, out, _ = await kubelet_dra("--output", "json", "explain", stdin=log)
    assert code == 3  # something DRA-looking is not in the catalogue (docs/explain.md, exit codes)
    unknown, known = json.loads(out)
    assert (unknown["line"], unknown["mode"], unknown["known"]) == (1, "?", False)
    assert unknown["source"] == "dra_plugin_manager.go:512"
    assert unknown["fix"].startswith("run kubelet-dra debug")
    assert (known["line"], known["mode"], known["key"]) == (3, "F12", "not-registered")


async def test_explain_reads_the_real_kubelets_registration_failures() -> None:
    """The lines kubelet 1.36.2 logged while the reference driver failed registration knob by knob."""
    log = Path(__file__).parents[1] / "fixtures" / "kubelet-1.36" / "registration-failures.log"
    code, out, _ = await kubelet_dra("--output", "json", "explain", "--file", str(log))
    assert code == 0
    modes = [item["mode"] for item in json.loads(out)]
    assert modes == ["F3", "F3", "F4", "F5", "F6", "F6", "F9", "F2", "F10", "F10", "F13", "F10"]
