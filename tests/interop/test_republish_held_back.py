"""The kubeletplugin helper's slice controller keeps the slices it created in a one-minute cache and re-creates
one deleted within that minute only when it is over: the restart checks, run right after the driver's start,
wait for that republish past ``--check-timeout`` and pass, as they do for a restart a minute or more later."""

from __future__ import annotations

from pathlib import Path

from realk8s import example_driver_cmd
from test_conformance_example_driver import run_conformance


async def test_a_republish_held_back_by_the_helpers_slice_cache_passes_the_restart_checks(interop_bin: Path):
    focus = r"^(CLM-001|LIF-007|SLC-00[67])$"
    code, report, _ = await run_conformance(
        example_driver_cmd(interop_bin, "gpu"), "--focus", focus, "--check-timeout", "20"
    )
    results = {check["id"]: check for check in report["checks"]}
    assert {check_id: check["result"] for check_id, check in results.items()} == dict.fromkeys(
        ("CLM-001", "LIF-007", "SLC-006", "SLC-007"), "passed"
    ), results
    assert code == 0
    assert results["LIF-007"]["seconds"] > 20, "the helper republished at once: its slice cache held nothing back"
