"""The LIF checks against drivers that break a restart rule no fault knob covers (the reference driver
wrapped in a shell that refuses to start in some situation, as badly written drivers do), and against
a driver that was already running, which the suite cannot restart."""

from __future__ import annotations

import pytest

from kubelet_dra.workbench.conformance.checks import all_checks
from kubelet_dra.workbench.conformance.framework import EMBEDDED, RESTART
from kubelet_dra.workbench.conformance.options import SuiteOptions
from kubelet_dra.workbench.conformance.suiterunner import run_suite
from kubelet_dra.workbench.conformance.target import Selection, Target
from kubelet_dra.workbench.junit import FAILED, SKIPPED

from .reference import GPU, REFERENCE, already_running


def wrapped(script: str) -> str:
    """The reference driver started by ``sh -c script``, which ends with ``exec "$0" "$@"`` (the driver)."""
    return f'sh -c \'{script}; exec "$0" "$@"\' {REFERENCE}'


STALE_SOCKET = wrapped(f"if test -S {{registry_dir}}/{GPU}-reg.sock; then echo stale socket >&2; exit 3; fi")
"""Exits when its registration socket is still there: cannot come back after a crash (SIGKILL)."""
ONCE = wrapped("if test -e {plugin_dir}/started; then echo started before >&2; exit 4; fi; touch {plugin_dir}/started")
"""Starts only once: cannot come back after any restart."""


@pytest.mark.parametrize(
    ("command", "focus", "failing", "reason"),
    [
        (STALE_SOCKET, r"^LIF-00[346]$", {"LIF-006"}, "its process exited with code 3"),
        (ONCE, r"^LIF-004$", {"LIF-004"}, "its process exited with code 4"),
    ],
    ids=["stale-socket", "once"],
)
async def test_a_driver_that_cannot_come_back_fails_the_restart_check(
    command: str, focus: str, failing: set[str], reason: str
) -> None:
    suite = await run_suite(Target(driver_cmd=command), SuiteOptions(check_timeout=15), Selection(focus=focus))
    assert set(suite.ids(FAILED)) == failing, {r.id: r.reason for r in suite.results}
    for check_id in failing:
        assert reason in suite.by_id()[check_id].reason


async def test_an_already_running_driver_passes_and_the_restart_checks_skip_with_the_reason() -> None:
    async with already_running() as target:
        suite = await run_suite(target, selection=Selection(focus=r"^(PRE|UNP|CDI|LIF)-"))
    assert suite.ids(FAILED) == [], {r.id: r.reason for r in suite.results if r.result == FAILED}
    skipped = {r.id: r.reason for r in suite.results if r.result == SKIPPED}
    restart = {c.id for c in all_checks() if RESTART in c.needs}
    assert set(skipped) == restart | {"LIF-009"}, skipped
    assert {skipped[check_id] for check_id in restart} == {RESTART.unmet}
    assert skipped["LIF-009"] == EMBEDDED.unmet
    assert suite.by_id()["LIF-007"].result == "passed", "the node restart needs no driver restart"


async def test_the_republish_checks_judge_one_kubelet_restart() -> None:
    """LIF-007 restarts the kubelet and waits for the republish; SLC-006 and SLC-007 judge that same
    restart instead of waiting for the driver's republish delay again (it is 30 s for Go drivers). The
    republish takes longer than ``--check-timeout``, within ``--republish-within``: the check's time limit
    catches a hang and does not cut that watch short."""
    republish = 5.0
    command = f"{REFERENCE} --republish-delay {republish:g}"
    options = SuiteOptions(check_timeout=3.0, republish_within=10.0)
    suite = await run_suite(Target(driver_cmd=command), options, Selection(focus=r"^(LIF-007|SLC-00[67])$"))
    results = suite.by_id()
    assert suite.ids(FAILED) == [], {r.id: r.reason for r in suite.results}
    # The driver's republish timer starts at the wipe, which may come a moment before the check's own clock.
    assert results["LIF-007"].seconds > options.check_timeout, "the first check waits for the driver's republish"
    # Another restart would wait for another republish: a check shorter than that delay made none.
    assert results["SLC-006"].seconds < republish and results["SLC-007"].seconds < republish, "no second restart"


async def test_a_late_republish_is_told_from_one_that_never_comes() -> None:
    """A driver past the limit but back while watched is late, with its time; the limit stays the verdict."""
    options = SuiteOptions(republish_within=1.5)
    late = await run_suite(
        Target(driver_cmd=f"{REFERENCE} --republish-delay 2.2"), options, Selection(focus="^SLC-006$")
    )
    (result,) = late.results
    assert result.result == "failed" and result.reason.startswith("late: the wiped slices were published again after ")
    seconds = float(result.reason.split("after ")[1].split(" s")[0])
    assert 1.5 < seconds < 3.0, result.reason
    in_time = await run_suite(
        Target(driver_cmd=f"{REFERENCE} --republish-delay 0.5"), options, Selection(focus="^SLC-006$")
    )
    assert in_time.results[0].result == "passed", in_time.results[0].reason
