"""The whole scenario library replayed with the real DRA example driver (``replay --driver``): every file holds or
is skipped naming what the driver does not offer (docs/replay.md, "Any driver"; the table there comes from
``benchmarks/replay_drivers.py``)."""

from __future__ import annotations

from pathlib import Path

from helpers import kubelet_dra
from libraryreplay import held, replay_library
from realk8s import REPO, example_driver_cmd

LEAST_HELD = 40


def test_the_library_holds_with_the_real_example_driver(interop_bin: Path):
    report = replay_library(["--driver", f"gpu={example_driver_cmd(interop_bin, 'gpu')}"])
    assert len(held(report)) >= LEAST_HELD, held(report)
    assert report["pod-lifecycle"]["result"] == "passed", "its CDI IDs resolve in the spec it wrote"
    assert report["prepare-fails-then-succeeds"]["result"] == "passed", "a fault on the wire, before the real driver"
    assert report["health-unknown-when-plugin-stops"]["skipped"] == (
        "needs device health (a health service); gpu.example.com serves none"
    )


async def test_an_unknown_driver_id_is_a_usage_error():
    code, _, err = await kubelet_dra(
        "replay", "--driver", "nosuch=./driver", str(REPO / "scenarios" / "pod-lifecycle.yaml")
    )
    assert code == 2 and "no scenario has a driver with id 'nosuch'" in err and "Traceback" not in err
