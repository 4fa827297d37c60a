"""``kubelet-dra conformance`` against NVIDIA's DRA GPU driver (a third-party driver on mock NVML, 4 A100s), under
both kubelet releases: with the default claim on the embedded API server, and on a real kube-apiserver with the
claim its users write (two A100s by selector, NVIDIA's GpuConfig), as docs/conformance.md shows it.

Run as a user runs it (the command, its JSON report); every check passes or skips with a reason, and the
driver's own log shows that no request of its client-go was refused or misread.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from realk8s import client_go_refusals, conformance_verdicts, nvidia_driver_cmd, nvidia_driver_missing
from test_conformance_example_driver import cluster_args, run_conformance

CLAIM = Path(__file__).parent / "claims" / "nvidia-two-a100.yaml"
RUNS = {"embedded": (), "real": ("--claim", str(CLAIM))}
"""Per API server, the claim flags: one device of the suite's class, or the documented example."""


@pytest.mark.parametrize("server", sorted(RUNS))
async def test_nvidias_gpu_driver_passes_under_both_releases(request: pytest.FixtureRequest, server: str):
    if reason := nvidia_driver_missing():
        pytest.skip(reason)
    request.getfixturevalue("interop_bin")
    args = (*cluster_args(request, server, "nvidia-node"), *RUNS[server], "--kubelet-version", "1.36,1.37")
    code, report, log = await run_conformance(nvidia_driver_cmd(), *args)
    assert [run["kubeletVersion"] for run in report["runs"]] == ["1.36", "1.37"]
    for run in report["runs"]:
        counts, unexplained = conformance_verdicts(run, "gpu-kubelet-plugin")
        assert not unexplained, f"kubelet {run['kubeletVersion']} {counts}: " + "\n".join(unexplained)
        assert counts["failed"] == 0 and counts["not run"] == 0 and counts["passed"] >= 55, counts
        skipped = {check["id"] for check in run["checks"] if check["result"] == "skipped"}
        assert {"HEA-001", "VER-008"} <= skipped, "NVIDIA's driver has no health service"
    assert code == 0
    assert not client_go_refusals(log), client_go_refusals(log)[:5]
