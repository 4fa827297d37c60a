"""docs/fidelity.md names every library scenario, and says "refused" exactly where ``replay --real-kubelet``
refuses the file: the table cannot fall behind the library or the refusal rules."""

from __future__ import annotations

import re
from pathlib import Path

from kubelet_dra.scenarios import realkubelet
from kubelet_dra.scenarios.loader import load

REPO = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^\| ([a-z0-9-]+) \| (holds|refused)\b", re.MULTILINE)


def test_every_library_scenario_has_its_row_and_the_right_verdict():
    rows = dict(ROW.findall((REPO / "docs" / "fidelity.md").read_text()))
    library = sorted(path for path in (REPO / "scenarios").glob("*.yaml"))
    assert sorted(rows) == sorted(path.stem for path in library), "docs/fidelity.md: add or remove scenario rows"
    for path in library:
        refused = bool(realkubelet.refusals(load(path), "1.36"))
        assert rows[path.stem] == ("refused" if refused else "holds"), path.name
