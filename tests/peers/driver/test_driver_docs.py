"""docs/driver.md's table of fault knobs lists every knob of ``KNOBS``, in its order, and no other."""

from __future__ import annotations

import re
from pathlib import Path

from kubelet_dra.peers.driver.knobs import KNOBS

DRIVER_PAGE = Path(__file__).resolve().parents[3] / "docs" / "driver.md"


def test_the_fault_knob_table_is_the_knobs() -> None:
    section = DRIVER_PAGE.read_text().split("## Fault knobs\n", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([a-z0-9-]+)[=`]", section, flags=re.MULTILINE)
    assert listed == [knob.name for knob in KNOBS], "docs/driver.md: one row per knob of KNOBS, in its order"


def test_the_any_driver_column_is_what_the_tap_carries_out() -> None:
    from kubelet_dra.workbench.tap.faults import NOT_ON_THE_WIRE

    section = DRIVER_PAGE.read_text().split("## Fault knobs\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z0-9-]+)[=`].*\| (yes[^|]*|no) \|$", section, flags=re.MULTILINE)
    assert [knob for knob, _ in rows] == [knob.name for knob in KNOBS], "every row says whether any driver has it"
    assert {knob for knob, word in rows if word == "no"} == set(NOT_ON_THE_WIRE)
