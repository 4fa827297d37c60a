"""``replay --compare`` refuses what it cannot do in one line, exit 2, before anything runs."""

from __future__ import annotations

from pathlib import Path

from helpers import kubelet_dra

REPO = Path(__file__).resolve().parents[3]
SCENARIO = str(REPO / "scenarios" / "apiserver-restart.yaml")


async def test_compare_without_a_real_kubelet_is_a_usage_error():
    code, _, err = await kubelet_dra("replay", "--compare", SCENARIO)
    assert code == 2
    assert err.strip().splitlines() == [
        "kubelet-dra: error: --cri-cmd, --kubeconfig and --compare go with --real-kubelet"
        " (fix: add --real-kubelet KUBELET)"
    ]


async def test_compare_refuses_a_file_the_real_kubelet_cannot_run(tmp_path: Path):
    kubelet = tmp_path / "kubelet"
    kubelet.write_text("#!/bin/sh\necho 'Kubernetes v1.36.2'\n")
    kubelet.chmod(0o755)
    refused = str(REPO / "scenarios" / "prepare-unprepare-by-hand.yaml")
    code, _, err = await kubelet_dra(
        "replay", "--compare", "--real-kubelet", str(kubelet), "--cri-cmd", "x {cri_socket}", refused
    )
    assert code == 2 and "Traceback" not in err
    assert "cannot run on the real kubelet 1.36" in err and "prepare-unprepare-by-hand.yaml:" in err
