"""``replay --compare``: library scenarios on kubelet-dra and on the real kubelet 1.36.2, column by column.

Three scenarios that cover the columns (a pod's calls and status, a kubelet restart in the middle of
a prepare with its wipe and re-publication, an API server restart under the watches) must come out
identical in every column but a known difference (docs/fidelity.md), and the report must say so per
column. The replay runs as a
subprocess while the test holds the machine-wide real-kubelet lock.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers import kubelet_dra
from realk8s import REPO

from kubelet_dra.workbench.fidelity.columns import COLUMNS
from kubelet_dra.workbench.fidelity.known import known_difference

SCENARIOS = ("one-connection-for-all-calls", "kubelet-restart-during-prepare", "apiserver-restart")


async def test_representative_scenarios_are_identical_on_both_nodes(turn: Path):
    files = [str(REPO / "scenarios" / f"{name}.yaml") for name in SCENARIOS]
    flags = ["--real-kubelet", str(turn / "kubelet"), "--cri-cmd", f"{turn}/fake-cri -listen unix://{{cri_socket}}"]
    code, out, err = await kubelet_dra("replay", "--compare", *flags, "--output", "json", *files, timeout=600)
    report = json.loads(out)
    differing = {
        scenario["name"]: [column["diff"] for column in scenario["columns"] if column["verdict"] == "differs"]
        for scenario in report["scenarios"]
    }
    assert code == 0 and report["accepted"], (differing, err[-2000:])
    assert [scenario["name"] for scenario in report["scenarios"]] == list(SCENARIOS)
    for scenario in report["scenarios"]:
        assert [column["column"] for column in scenario["columns"]] == list(COLUMNS)
        for column in scenario["columns"]:  # identical, or a difference documented in docs/fidelity.md
            want = "known" if known_difference(scenario["name"], column["column"]) else "identical"
            assert column["verdict"] in ("identical", want), (scenario["name"], column)
        assert scenario["simulated"]["passed"] and scenario["real"]["passed"]
        # each side's trace is a story, not two empty lists that agree
        for side in ("simulated", "real"):
            trace = scenario[side]["trace"]
            assert any("NodePrepareResources OK" in line for line in trace["calls"]), (scenario["name"], side)
            assert any("Running" in line for line in trace["pod status"]), (scenario["name"], side)
    real_calls = report["scenarios"][1]["real"]["trace"]["calls"]
    assert any("NodePrepareResources CANCELLED" in line for line in real_calls), "the restart cut a prepare"
