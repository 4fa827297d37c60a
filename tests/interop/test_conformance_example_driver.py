"""``kubelet-dra conformance`` against the real DRA example driver, on the embedded API server and on a
real kube-apiserver 1.36 (``--kubeconfig``), so both servers are held to one standard.

Run as a user runs it (the command, its JSON report); every check passes or skips with a reason,
and the driver's own log shows that no request of its client-go was refused or misread.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from helpers import kubelet_dra
from realk8s import client_go_refusals, conformance_verdicts, example_driver_cmd

SERVERS = ["embedded", "real"]


def cluster_args(request: pytest.FixtureRequest, server: str, node: str) -> tuple[str, ...]:
    """The flags that point the suite at ``server``: nothing for the embedded one, the real one's kubeconfig."""
    if server == "embedded":
        return ()
    real = request.getfixturevalue("real_apiserver")
    return ("--kubeconfig", str(real.kubeconfig), "--node-name", node)


async def run_conformance(driver_cmd: str, *extra: str) -> tuple[int, dict, str]:
    """The suite's exit code, JSON report and the driver's logs (the work dirs are kept to read them, then removed)."""
    code, out, err = await kubelet_dra(
        "conformance", "--driver-cmd", driver_cmd, "--output", "json", "--keep", *extra, timeout=600
    )
    assert out.strip(), f"no report (exit {code}): {err[-3000:]}"
    report = json.loads(out)
    logs = []
    for run in report.get("runs") or [report]:  # several --kubelet-version: one run, one work dir each
        workdir = Path(run["testbed"]["workdir"])
        logs += [path.read_text(errors="replace") for path in sorted(workdir.glob("*.log"))]
        shutil.rmtree(workdir, ignore_errors=True)
    return code, report, "\n".join(logs)


PROFILES = {
    "gpu": ("gpu", ""),
    "cpu": ("cpu", ""),
    "net": ("net", ""),
    "gpu-partitions": ("gpu", "--gpu-partitions 2 --driver-name partitions.example.com"),
}
"""The example driver's profiles: whole GPUs; CPUs and NICs shared with consumable capacity; GPUs published
whole and in partitions that share counters (8 GPUs, 24 devices, at most 16 allocatable at once), under a
driver name of their own: on the shared real server the suite counts a driver's slices of other nodes."""


@pytest.mark.parametrize("server", SERVERS)
@pytest.mark.parametrize("profile", sorted(PROFILES))
async def test_the_example_driver_passes(request: pytest.FixtureRequest, interop_bin: Path, profile: str, server: str):
    args = cluster_args(request, server, f"example-{profile}")
    code, report, log = await run_conformance(example_driver_cmd(interop_bin, *PROFILES[profile]), *args)
    counts, unexplained = conformance_verdicts(report, "dra-example-kubeletplugin")
    assert not unexplained, f"{counts}: " + "\n".join(unexplained)
    assert code == 0
    assert counts["passed"] >= 55, counts
    assert not client_go_refusals(log), client_go_refusals(log)[:5]
    skipped = {check["id"] for check in report["checks"] if check["result"] == "skipped"}
    assert {"HEA-001", "VER-008"} <= skipped, "the example driver has no health service"
