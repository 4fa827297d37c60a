"""``kubelet-dra replay FILE…``: replay scenario files against real drivers; exit 0 only if every expectation held."""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import attrs

from kubelet_dra.cli import compare, nodeflags, output
from kubelet_dra.cli.argtypes import deadline_scale, positive_float
from kubelet_dra.cli.command import Command
from kubelet_dra.cli.replaylive import ReplayPlan, present_faults, replay_all
from kubelet_dra.kubelet.release import release
from kubelet_dra.peers.errors import UsageError
from kubelet_dra.workbench.fidelity.both import KUBELET_TIMING, TIMINGS
from kubelet_dra.workbench.realnode import RealKubeletOptions, RealManagerOptions
from kubelet_dra.workbench.scenarios import onrealkubelet as realkubelet
from kubelet_dra.workbench.scenarios import replayreport as report
from kubelet_dra.workbench.scenarios.carryover import carry_all
from kubelet_dra.workbench.scenarios.library import library_files
from kubelet_dra.workbench.scenarios.loader import ScenarioError, load
from kubelet_dra.workbench.scenarios.model import Scenario
from kubelet_dra.workbench.scenarios.replayer import (
    check_faults,
    parse_fault,
)
from kubelet_dra.workbench.scenarios.undertest import REAL_DRIVER_WAIT, UnderTest
from kubelet_dra.workbench.tap.faults import unsupported
from kubelet_dra.workbench.testbed import claimshapes as shapes
from kubelet_dra.workbench.testbed.claimshapes import device_class_file


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="*", metavar="FILE", help="scenario files (YAML)")
    parser.add_argument(
        "--library",
        action="store_true",
        help="also every file of the scenario library installed with kubelet-dra (--check --output json lists them)",
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="DRIVER_ID:KNOB=VALUE",
        help="set a reference driver's fault knob at each of its starts (repeatable), e.g. gpu:prepare-error=boom",
    )
    parser.add_argument(
        "--driver",
        metavar="DRIVER_ID=COMMAND",
        action="append",
        default=[],
        help="run the scenario's driver DRIVER_ID from COMMAND instead (your own driver in a scenario; repeatable;"
        " placeholders as in a scenario's command:)",
    )
    under_test = parser.add_argument_group(
        "the driver under test, for --driver (as conformance takes them; docs/replay.md, 'Any driver')"
    )
    under_test.add_argument("--driver-name", metavar="NAME", help="its name (default: learnt from its registration)")
    under_test.add_argument(
        "--device-class",
        metavar="FILE",
        help="a DeviceClass manifest for its devices, in place of each file's class for the driver it plays"
        " (default: the file's class, selecting the driver under test by its name)",
    )
    under_test.add_argument(
        "--claim",
        action="append",
        default=[],
        metavar="FILE",
        help="a claim it accepts (a ResourceClaimSpec or a ResourceClaim(Template) manifest; repeatable): each claim"
        " a file makes for the driver it plays takes its requests (default: the file's own)",
    )
    under_test.add_argument(
        "--driver-wait",
        type=positive_float,
        default=REAL_DRIVER_WAIT,
        metavar="SECONDS",
        help="the longest an expectation on its own timing (registration, slices, a prepare) waits past the file's"
        f" deadline (default {REAL_DRIVER_WAIT:g}: the kubeletplugin helper re-creates a deleted slice up to a"
        " minute after it created it); lower it for a driver that answers at once, to fail sooner",
    )
    nodeflags.add_kubelet_version_argument(parser)
    parser.add_argument("--junit", metavar="FILE", help="also write the results as JUnit XML to FILE")
    parser.add_argument("--keep", action="store_true", help="keep each scenario's work dir (logs, sockets, state)")
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="replay up to N files at once, each on a node of its own (default 1; a real kubelet plays one at a time);"
        " each file's lines are printed when it ends",
    )
    parser.add_argument(
        "--deadline-scale",
        type=deadline_scale,
        default=1.0,
        metavar="FACTOR",
        help="on a loaded machine (a shared CI runner): let each expectation wait up to FACTOR times its deadline and"
        " each action FACTOR times its timeout; 'auto' takes the one-minute load average per CPU when each file"
        " starts. An expectation held late passes and the report names it (default 1: the files' deadlines)",
    )
    parser.add_argument("--check", action="store_true", help="only load and check the files; run nothing")
    real = parser.add_argument_group("the node played by a real kubelet (docs/replay.md, 'On the real kubelet')")
    real.add_argument("--real-kubelet", metavar="KUBELET", help="the kubelet binary to play the node (needs root)")
    real.add_argument(
        "--cri-cmd",
        metavar="COMMAND",
        help="with --real-kubelet: the container runtime's command, {cri_socket} where it listens"
        " (e.g. 'fake-cri -listen unix://{cri_socket}')",
    )
    real.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="with --real-kubelet: a real control plane's kubeconfig instead of the embedded API server",
    )
    real.add_argument(
        "--real-manager",
        metavar="HARNESS",
        help="with --real-kubelet: play the node of a file that prepares or unprepares by hand with the real kubelet's"
        " DRA manager, the dra-manager-harness binary of the same release (docs/replay.md, 'By hand, on the real DRA"
        " manager')",
    )
    real.add_argument(
        "--compare",
        action="store_true",
        help="with --real-kubelet: replay each file on kubelet-dra and on the real kubelet and compare their calls,"
        " pod statuses, events, slices and checkpoints (docs/replay.md, 'Both nodes compared')",
    )
    real.add_argument(
        "--timing",
        choices=TIMINGS,
        help="with --compare: 'kubelet' (default) runs kubelet-dra on the real kubelet's constants and deadlines,"
        " one clock for both; 'file' runs it on the file's timing block, faster, but background work (wipes,"
        " retries, health messages) can differ between the sides",
    )


def run(args: argparse.Namespace) -> int:
    kubelet = release(args.kubelet_version)
    files = [*args.files, *(library_files() if args.library else [])]
    if not files:
        raise UsageError("no scenario file given", fix="give scenario files, or --library for the installed library")
    if args.jobs < 1 or (args.jobs > 1 and (args.real_kubelet or args.compare)):
        raise UsageError(
            f"--jobs {args.jobs}: give 1 or more, and only 1 with --real-kubelet (one kubelet per machine)",
            fix="leave --jobs out, or replay on the simulated node",
        )
    scenarios = [scenario.on(kubelet) for scenario in _load_all(files)]
    under_tests = _under_tests(args, scenarios)
    faults = _faults(args.fault, scenarios, under_tests)
    real = _real_kubelet(args, scenarios)
    manager = RealManagerOptions(args.real_manager) if args.real_manager else None
    if args.check:
        if args.output == "json":
            output.print_json({"valid": [scenario.path for scenario in scenarios]})
        else:
            output.console().print(f"{len(scenarios)} scenario file(s) are valid")
        return 0
    text = args.output == "text"
    with output.quiet_logs(args.verbosity):
        carried = asyncio.run(carry_all(scenarios, under_tests))
    if args.compare:
        args.timing = args.timing or KUBELET_TIMING
        runnable = [c.scenario for c in carried if not c.skip]
        return compare.run(args, runnable, [present_faults(faults, scenario) for scenario in runnable], real, manager)
    with output.quiet_logs(args.verbosity):
        plan = ReplayPlan(
            faults,
            keep=args.keep,
            live=text,
            real=real,
            manager=manager,
            jobs=args.jobs,
            deadline_scale=args.deadline_scale,
        )
        results = asyncio.run(replay_all(carried, plan))
    if args.junit:
        report.write_junit(args.junit, results)
    output.in_ci(report.SUITE, report.headline(results), report.cases(results), json_output=not text)
    if text:
        console = output.console()
        console.print(report.summary(results))
        for result in results:
            if not result.passed:
                console.print(report.failures(result), markup=False, highlight=False)
    else:
        output.print_json(report.to_json(results))
    return 0 if all(result.passed for result in results) else 1


def _real_kubelet(args: argparse.Namespace, scenarios: list[Scenario]) -> RealKubeletOptions | None:
    """The real kubelet's options, once every scenario is known to be replayable on it."""
    if args.real_kubelet is None and (args.cri_cmd or args.kubeconfig or args.compare):
        raise UsageError(
            "--cri-cmd, --kubeconfig and --compare go with --real-kubelet", fix="add --real-kubelet KUBELET"
        )
    if args.real_kubelet is None and args.real_manager:
        raise UsageError(
            "--real-manager goes with --real-kubelet, the kubelet binary of the same release (the harness cannot say"
            " its release)",
            fix="add --real-kubelet KUBELET",
        )
    if args.timing and not args.compare:
        raise UsageError("--timing goes with --compare", fix="add --compare, or leave --timing out")
    if args.real_kubelet is None:
        return None
    if args.real_manager:
        RealManagerOptions(args.real_manager).check()
    # a file that prepares by hand runs on the real DRA manager when there is one: it needs no kubelet process
    on_manager = {scenario.path for scenario in scenarios if args.real_manager and realkubelet.by_hand(scenario)}
    on_kubelet = [scenario for scenario in scenarios if scenario.path not in on_manager]
    if on_kubelet and not args.cri_cmd:
        raise UsageError("--real-kubelet needs --cri-cmd", fix="e.g. --cri-cmd 'fake-cri -listen unix://{cri_socket}'")
    options = RealKubeletOptions(args.real_kubelet, args.cri_cmd or "", kubeconfig=args.kubeconfig)
    kubelet_release = options.release()
    refused = [
        reason
        for scenario in scenarios
        for reason in realkubelet.refusals(scenario, kubelet_release, manager=scenario.path in on_manager)
    ]
    if refused:
        hint = not args.real_manager and any(realkubelet.by_hand(scenario) for scenario in scenarios)
        by_hand = "; with --real-manager HARNESS the by-hand steps run on the real DRA manager" if hint else ""
        raise UsageError(
            f"{len(refused)} step(s) or setting(s) cannot run on the real kubelet {kubelet_release}: "
            + "; ".join(refused),
            fix="replay those files on the simulated node (without --real-kubelet)" + by_hand,
        )
    if on_kubelet and not args.check:
        options.check()
    return options


def _load_all(files: list[str]) -> list[Scenario]:
    """Every file is checked before anything runs; the errors of all files are reported together."""
    scenarios, issues = [], []
    for file in files:
        try:
            scenarios.append(load(file))
        except ScenarioError as err:
            issues += err.issues
    if issues:
        raise ScenarioError(issues)
    return scenarios


def _under_tests(args: argparse.Namespace, scenarios: list[Scenario]) -> list[UnderTest]:
    """Each ``--driver ID=COMMAND``: the file driver ``ID`` played by that command, with what it accepts."""
    found: list[UnderTest] = []
    for text in args.driver:
        driver_id, sep, command = text.partition("=")
        if not sep or not driver_id or not command.strip():
            raise UsageError(f"--driver {text!r} is not DRIVER_ID=COMMAND", fix="e.g. --driver 'gpu=./my-driver ...'")
        if not any(driver.id == driver_id for scenario in scenarios for driver in scenario.drivers):
            raise UsageError(f"--driver {text}: no scenario has a driver with id {driver_id!r}", fix="use a driver id")
        found.append(UnderTest(driver_id, command, name=args.driver_name, wait=args.driver_wait))
    described = args.driver_name or args.device_class or args.claim
    if described and len(found) != 1:
        raise UsageError(
            "--driver-name, --device-class and --claim describe the one driver of --driver",
            fix="give exactly one --driver with them",
        )
    if not found:
        return found
    device_class = device_class_file(Path(args.device_class)) if args.device_class else None
    return [attrs.evolve(found[0], device_class=device_class, claims=shapes.load(args.claim))]


def _faults(texts: list[str], scenarios: list[Scenario], under_tests: list[UnderTest]) -> dict[str, dict[str, str]]:
    """``--fault ID:KNOB=VALUE``s; a driver under test takes only what the tap carries out on the wire."""
    faults: dict[str, dict[str, str]] = {}
    played = {under_test.driver_id for under_test in under_tests}
    for text in texts:
        driver_id, knob, value = parse_fault(text)
        if not any(driver.id == driver_id for scenario in scenarios for driver in scenario.drivers):
            raise UsageError(f"--fault {text}: no scenario has a driver with id {driver_id!r}", fix="use a driver id")
        if driver_id in played and (why := unsupported(knob, value)):
            raise UsageError(f"--fault {text}: {why}", fix="use a wire knob (docs/tap.md#faults-on-the-wire)")
        faults.setdefault(driver_id, {})[knob] = value
    for scenario in scenarios:
        check_faults(scenario, present_faults(faults, scenario))
    return faults


COMMAND = Command(
    name="replay",
    description=(
        "Load and check every scenario file, then replay each: stage the embedded API server, the simulated node and"
        " the drivers, run the steps in order and evaluate every expectation. Exit 0 only when every expectation held,"
        " 1 when one did not, 2 when a file is invalid. Format: scenarios/README.md; schema: scenarios/schema.json."
    ),
    add_arguments=add_arguments,
    run=run,
)
