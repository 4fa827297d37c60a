"""The runner against real drivers: probe, selection, verdicts, clean-up, fast failure, an already-running driver."""

from __future__ import annotations

import asyncio
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubelet_dra.peers.errors import UsageError
from kubelet_dra.workbench.conformance.checkcontext import CheckContext
from kubelet_dra.workbench.conformance.checks import all_checks
from kubelet_dra.workbench.conformance.framework import CHECKS, MUST, RESTART, SHOULD, Citation, check
from kubelet_dra.workbench.conformance.options import SuiteOptions
from kubelet_dra.workbench.conformance.suiterunner import REGISTRATION_TAG, run_suite
from kubelet_dra.workbench.conformance.target import Selection, Target
from kubelet_dra.workbench.testbed import objects

from .reference import GPU, NO_SLICES_WITHIN, REFERENCE, REGISTERS_WITHIN, already_running, with_fault

MINE = r"^(REG|VER|SLC)-"
RULE = Citation("a check registered by a test", "tests/workbench/conformance/test_runner.py")


async def test_reference_driver_passes_the_registration_version_and_slice_checks():
    started = time.monotonic()
    suite = await run_suite(Target(driver_cmd=REFERENCE), selection=Selection(focus=MINE))
    assert suite.ids("failed") == [], {r.id: r.reason for r in suite.results if r.result == "failed"}
    assert len(suite.ids("passed")) >= 22
    assert suite.ids("skipped") == ["VER-008"], "health is not advertised without --health"
    assert "DRAResourceHealth" in suite.by_id()["VER-008"].reason
    caps = suite.capabilities
    assert caps.driver_name == GPU, "the driver's name is learnt from GetInfo"
    assert caps.versions == ("v1.DRAPlugin", "v1beta1.DRAPlugin")
    assert caps.chosen_service == "v1.DRAPlugin"
    assert caps.can_restart and caps.embedded and caps.reference
    assert caps.socket_path.startswith(suite.testbed["registryDir"])
    assert suite.exit_code == 0
    assert time.monotonic() - started < 30


async def test_a_driver_that_never_registers_fails_every_check_at_once_with_the_diagnosis():
    started = time.monotonic()
    suite = await run_suite(Target(driver_cmd=with_fault("getinfo-type", "CSIPlugin")))
    assert time.monotonic() - started < 10, "no check waits for a timeout"
    results = suite.by_id()
    assert "F4 wrong plugin type" in results["REG-002"].reason
    for result in suite.results:
        if REGISTRATION_TAG not in result.check.tags and result.result in ("failed", "warning"):
            assert result.reason.startswith("driver not registered: F4"), result
    assert not [r.id for r in suite.results if r.result == "passed" and REGISTRATION_TAG not in r.check.tags]
    assert results["REG-001"].result == "passed", "the socket itself is fine"
    assert suite.exit_code == 1
    assert "--fault-getinfo-type" in suite.driver_log


@pytest.fixture
def probe_checks() -> Iterator[list[str]]:
    """Checks registered for this test only: each shows one way a check can end."""
    ids = ["ZZZ-901", "ZZZ-902", "ZZZ-903", "ZZZ-904", "ZZZ-905", "ZZZ-906"]
    seen: list[str] = []

    @check(
        ids[0],
        "fails after making a claim and a call",
        tags=("prepare",),
        level=MUST,
        why="test",
        rule=RULE,
        reference="test",
    )
    async def fails(ctx: CheckContext) -> None:
        claim = await ctx.allocated_claim(1)
        seen.append(claim["metadata"]["name"])
        await ctx.prepare(claim)
        ctx.fail("on purpose")

    @check(
        ids[1],
        "finds the previous check's claim gone",
        tags=("prepare",),
        level=MUST,
        why="test",
        rule=RULE,
        reference="test",
    )
    async def cleaned(ctx: CheckContext) -> None:
        ctx.expect(await objects.get(ctx.bed.kube, "ResourceClaim", seen[0]) is None, "claim left behind")
        ctx.expect(not ctx.calls(), "calls of the previous check leak into this one")

    @check(ids[2], "hangs", tags=("slow",), level=MUST, why="test", rule=RULE, reference="test")
    async def hangs(ctx: CheckContext) -> None:
        await asyncio.sleep(30)

    @check(ids[3], "crashes", tags=("prepare",), level=MUST, why="test", rule=RULE, reference="test")
    async def crashes(ctx: CheckContext) -> None:
        raise RuntimeError("bug in the check")

    @check(
        ids[4],
        "needs a restart",
        tags=("lifecycle",),
        level=MUST,
        why="test",
        rule=RULE,
        reference="test",
        needs=(RESTART,),
    )
    async def restarts(ctx: CheckContext) -> None:
        raise AssertionError("never runs without --driver-cmd")

    @check(
        ids[5],
        "fails a recommendation",
        tags=("prepare",),
        level=SHOULD,
        why="test",
        rule=RULE,
        reference="test",
    )
    async def recommends(ctx: CheckContext) -> None:
        ctx.fail("not recommended")

    yield ids
    for check_id in ids:
        del CHECKS[check_id]


async def test_verdicts_timeouts_crashes_and_clean_up_between_checks(probe_checks):
    suite = await run_suite(
        Target(driver_cmd=REFERENCE), SuiteOptions(check_timeout=1.0), Selection(focus="^ZZZ-90[1-4]")
    )
    results = suite.by_id()
    assert results["ZZZ-901"].result == "failed" and results["ZZZ-901"].reason == "on purpose"
    methods = [call.method.rsplit("/", 1)[1] for call in results["ZZZ-901"].calls]
    assert methods == ["NodePrepareResources"], "a failed check keeps the calls it made"
    assert results["ZZZ-902"].result == "passed", results["ZZZ-902"].reason
    assert results["ZZZ-903"].result == "failed" and "did not finish within 1 s" in results["ZZZ-903"].reason
    assert results["ZZZ-903"].seconds < 3
    assert results["ZZZ-904"].reason.startswith("RuntimeError: bug in the check")


@pytest.fixture
def waiting_checks() -> Iterator[list[str]]:
    """Two checks that need the same observation, which hangs; one that hangs in a wait it makes by design."""
    ids = ["ZZZ-907", "ZZZ-908", "ZZZ-909"]
    for check_id in ids[:2]:

        @check(check_id, "observes a hang", tags=("slow",), level=MUST, why="test", rule=RULE, reference="test")
        async def observes(ctx: CheckContext) -> None:
            await ctx.observe("a hanging restart", lambda: asyncio.sleep(30))

    @check(ids[2], "waits by design, then hangs", tags=("slow",), level=MUST, why="test", rule=RULE, reference="test")
    async def waits(ctx: CheckContext) -> None:
        with ctx.waiting(1.0):
            await asyncio.sleep(0.8)  # past the 0.5 s limit, within the wait's second
        await asyncio.sleep(30)

    yield ids
    for check_id in ids:
        del CHECKS[check_id]


async def test_an_observation_cut_short_by_the_time_limit_is_not_tried_again(waiting_checks):
    """The first check that asks pays for the observation; when its time limit cuts it short, the later
    check is not run (its cause named) instead of waiting as long again for the same thing."""
    suite = await run_suite(
        Target(driver_cmd=REFERENCE), SuiteOptions(check_timeout=0.5), Selection(focus="^ZZZ-90[78]")
    )
    first, later = (suite.by_id()[check_id] for check_id in waiting_checks[:2])
    assert first.result == "failed" and "did not finish within 0.5 s" in first.reason, first.reason
    assert later.result == "not run" and later.cause == "ZZZ-907", later
    assert "a hanging restart did not finish" in later.reason and later.seconds < 0.5, later


async def test_a_wait_by_design_adds_the_time_it_took_to_the_limit(waiting_checks):
    suite = await run_suite(Target(driver_cmd=REFERENCE), SuiteOptions(check_timeout=0.5), Selection(focus="^ZZZ-909"))
    (result,) = suite.results
    assert result.result == "failed" and re.search(r"did not finish within 1\.[34] s", result.reason), result.reason
    assert 1.2 < result.seconds < 2.5, result.seconds


@pytest.mark.parametrize(("strict", "outcome", "code"), [(False, "warning", 0), (True, "failed", 1)])
async def test_a_failed_should_check_warns_and_fails_the_run_only_when_strict(
    probe_checks, strict: bool, outcome: str, code: int
):
    suite = await run_suite(Target(driver_cmd=REFERENCE), SuiteOptions(strict=strict), Selection(focus="^ZZZ-906"))
    result = suite.by_id()["ZZZ-906"]
    assert (result.result, result.reason, suite.exit_code) == (outcome, "not recommended", code)
    assert suite.to_json()["counts"][outcome] == 1


async def test_an_already_running_driver_is_checked_and_restart_checks_skip(probe_checks):
    async with already_running() as target:
        suite = await run_suite(target, selection=Selection(focus=r"^(REG-00[1-5]|SLC-001|ZZZ-905)"))
    results = suite.by_id()
    assert results["ZZZ-905"].result == "skipped"
    assert results["ZZZ-905"].reason == RESTART.unmet
    assert suite.ids("failed") == [], {r.id: r.reason for r in suite.results if r.result == "failed"}
    assert suite.capabilities.driver_name == GPU and not suite.capabilities.can_restart


def test_selection_by_focus_skip_and_tags():
    checks = all_checks()
    assert [c.id for c in Selection(focus="^REG-00[12]$").select(checks)] == ["REG-001", "REG-002"]
    assert not [c for c in Selection(skip="^REG-").select(checks) if c.id.startswith("REG-")]
    assert {c.id for c in Selection(focus="GetInfo").select(checks)} >= {"REG-003", "REG-004"}
    tagged = Selection(tags=frozenset({"slices"})).select(checks)
    assert tagged and all("slices" in c.tags for c in tagged)


@pytest.mark.parametrize(
    ("selection", "message"),
    [
        (Selection(focus="("), "--focus"),
        (Selection(skip="[z-a]"), "--skip"),
        (Selection(tags=frozenset({"gpu"})), "tag"),
    ],
)
def test_a_bad_selection_is_a_usage_error(selection: Selection, message: str):
    with pytest.raises(UsageError, match=message):
        selection.select(all_checks())


@pytest.mark.parametrize(
    "fields",
    [{}, {"driver_cmd": "x", "registry_dir": "/r", "kubeconfig": "k"}, {"registry_dir": "/r"}],
)
def test_a_target_needs_exactly_one_driver(fields: dict[str, str]):
    with pytest.raises(UsageError):
        Target(**fields)


async def test_node_restricted_gives_the_driver_the_nodes_identity():
    target = Target(
        driver_cmd=with_fault("slices-node", "node-9"), node_restricted=True, registration_timeout=NO_SLICES_WITHIN
    )
    suite = await run_suite(target, selection=Selection(focus="^SLC-00[15]$"))
    results = suite.by_id()
    assert results["SLC-001"].result == "failed"
    assert results["SLC-005"].result == "passed", "the API server refused the other node's slices"
    assert "node-kubeconfig" in suite.driver_log, "the driver was started with the node's kubeconfig"


async def test_slices_lost_to_an_earlier_check_are_restored_for_the_next():
    options = SuiteOptions(republish_within=1.5)
    suite = await run_suite(Target(driver_cmd=with_fault("no-republish")), options, Selection(focus="^SLC-00[68]$"))
    results = suite.by_id()
    assert results["SLC-006"].result == "failed", "the driver never republishes its wiped slices"
    assert results["SLC-008"].result == "passed", "the runner restarted the driver, which published them again"
    assert suite.driver_log.count("--- start") == 2


async def test_a_driver_failing_only_its_first_registration_attempt_registers_within_the_grace():
    # The driver serves its control socket after its registration socket, which the node dials at once: once the
    # control socket is there, the node's first GetInfo has failed, and its retries come 0.5 s and 1.5 s later (a
    # fixed delay from the shell's start raced the driver's own start: a clear sent before the control socket was
    # there was lost).
    clear_soon = (
        "( until [ -S {plugin_dir}/control.sock ]; do sleep 0.05; done; sleep 0.2;"
        " {python} -m kubelet_dra driver fault --plugin-dir {plugin_dir} clear >/dev/null ) &"
    )
    command = f'sh -c \'{clear_soon} exec "$0" "$@"\' {with_fault("getinfo-error", "warming-up")}'
    target = Target(driver_cmd=command, keep=True, registration_timeout=REGISTERS_WITHIN)
    suite = await run_suite(target, selection=Selection(focus="^REG-002$"))
    log = Path(next(iter(suite.testbed["drivers"].values()))).read_text()
    shutil.rmtree(suite.testbed["workdir"])
    assert "GetInfo err=warming-up" in log, "the node's first attempt failed"
    assert suite.ids("passed") == ["REG-002"], suite.by_id()["REG-002"].reason


async def test_a_check_blocked_by_a_refused_claim_returns_at_once_without_restarting_the_kubelet():
    """LIF-007 restarts the kubelet and waits for the republish; when the driver refuses the suite's claim the
    check is not run, so it must not pay that wait first (here the driver republishes after 20 s)."""
    command = with_fault("require-all-devices") + " --republish-delay 20"
    options = SuiteOptions(check_timeout=120, republish_within=30)
    target = Target(driver_cmd=command, registration_timeout=REGISTERS_WITHIN)
    suite = await run_suite(target, options, Selection(focus="^(CLM-001|LIF-007)$"))
    blocked = suite.by_id()["LIF-007"]
    assert blocked.result == "not run" and blocked.cause == "CLM-001", blocked.reason
    assert blocked.seconds < 10, f"the blocked check took {blocked.seconds:.1f} s"
