"""``replay --compare --real-manager``: a file that prepares by hand, on kubelet-dra and on the real kubelet 1.36.2's
DRA manager (``dra-manager-harness``), column by column.

``reprepare-duplicates-devices-1-36`` prepares a claim by hand, restarts the node and prepares it again: the real
v1.36.2 manager appends the driver's second answer (the claim's device twice in its checkpoint, each CDI ID twice),
which kubelet-dra did not do before this comparison. Every column must be identical, and the report must name its
oracle. The harness is no kubelet: no machine-wide lock, no root.
"""

from __future__ import annotations

import json
from pathlib import Path

from helpers import kubelet_dra
from realk8s import REPO

from kubelet_dra.workbench.fidelity.columns import COLUMNS

SCENARIO = REPO / "scenarios" / "reprepare-duplicates-devices-1-36.yaml"


async def test_a_by_hand_file_is_identical_on_the_real_dra_manager(interop_bin: Path):
    flags = ["--real-kubelet", str(interop_bin / "kubelet"), "--real-manager", str(interop_bin / "dra-manager-harness")]
    code, out, err = await kubelet_dra("replay", str(SCENARIO), "--compare", *flags, "--output", "json", timeout=300)
    report = json.loads(out)
    [scenario] = report["scenarios"]
    differing = [column["diff"] for column in scenario["columns"] if column["verdict"] != "identical"]
    assert code == 0 and report["accepted"] and not differing, (differing, err[-2000:])
    assert scenario["oracle"] == "real DRA manager"
    assert [column["column"] for column in scenario["columns"]] == list(COLUMNS)
    assert scenario["simulated"]["passed"] and scenario["real"]["passed"]
    real = scenario["real"]["trace"]
    # a story, not two empty columns that agree: the registration, the prepares, the device twice
    assert any("Registration/NotifyRegistrationStatus OK" in line for line in real["calls"])
    assert any("DRAPlugin/NodePrepareResources OK" in line for line in real["calls"])
    assert len(real["checkpoint"]) == 2 and real["checkpoint"][0] == real["checkpoint"][1], real["checkpoint"]
    assert real["slices"][:2] == ["gpu.example.com: created slice-1 (1 devices)", "gpu.example.com: deleted slice-1"]
