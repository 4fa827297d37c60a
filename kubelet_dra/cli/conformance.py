"""``kubelet-dra conformance``: certify a DRA driver at the socket level; exit 0 when no ``must`` check failed
(``--strict``: no check at all), once per kubelet release given."""

from __future__ import annotations

import argparse
import asyncio
import textwrap
from pathlib import Path

from rich.markup import escape

from kubelet_dra.cli import nodeflags, output
from kubelet_dra.cli.argtypes import positive_float, positive_int
from kubelet_dra.cli.command import Command
from kubelet_dra.kubelet.release import KubeletRelease
from kubelet_dra.peers.errors import UsageError
from kubelet_dra.workbench.conformance import suitereport as report
from kubelet_dra.workbench.conformance.checks import all_checks
from kubelet_dra.workbench.conformance.framework import TAGS, Check
from kubelet_dra.workbench.conformance.options import SuiteOptions
from kubelet_dra.workbench.conformance.results import ReleaseRuns
from kubelet_dra.workbench.conformance.suiterunner import run_releases
from kubelet_dra.workbench.conformance.target import REGISTRATION_TIMEOUT, Selection, Target
from kubelet_dra.workbench.testbed import PLACEHOLDERS, REFERENCE_DRIVER
from kubelet_dra.workbench.testbed import claimshapes as shapes

DEFAULTS = SuiteOptions()
REFERENCE_DRIVER_NAME = "gpu.example.com"
"""The reference driver's name under ``--reference-driver`` unless ``--driver-name`` gives another."""

REAL_DRIVERS = """\
real Go drivers (they take the kubelet's plugins root and serve <root>/<driver>/dra.sock):
  kubelet-dra conformance --driver-cmd 'dra-example-kubeletplugin --node-name {node} --kubeconfig {kubeconfig}
    --kubelet-registrar-directory-path {registry_dir} --kubelet-plugins-directory-path {plugins_root}
    --cdi-root {cdi_root} --device-profile gpu --kube-api-qps 1000 --kube-api-burst 1000'
  kubelet-dra conformance --driver-name test-driver.cdi.k8s.io --driver-cmd 'dra-test-driver
    --kubeconfig {kubeconfig} kubelet-plugin --node-name {node} --plugin-registration-path {registry_dir}
    --datadir {plugins_root} --cdi-dir {cdi_root}'
  (--driver-name makes the suite create <root>/<driver>, which the test driver needs to exist)
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter  # keeps the commands' lines
    parser.description = textwrap.fill(parser.description or "", 79)
    parser.epilog = REAL_DRIVERS
    target = parser.add_argument_group(
        "the driver under test: --driver-cmd (or --reference-driver), or --registry-dir with --kubeconfig;"
        " --kubeconfig alone picks the cluster"
    )
    target.add_argument(
        "--driver-cmd",
        metavar="COMMAND",
        help="command that starts the driver; the suite starts, restarts and stops it. Placeholders: "
        + ", ".join("{" + p + "}" for p in PLACEHOLDERS),
    )
    target.add_argument(
        "--reference-driver",
        nargs="?",
        const="",
        metavar="FLAGS",
        help="the reference driver that ships with kubelet-dra as the driver under test, with its FLAGS if given"
        " (e.g. '--devices 4 --fault-prepare-error boom'; kubelet-dra driver --help lists them)",
    )
    target.add_argument("--registry-dir", metavar="DIR", help="registry dir of a driver that is already running")
    target.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="a real cluster's API server instead of the embedded one (with --registry-dir: the one the driver uses;"
        " with --driver-cmd: the driver gets it as {kubeconfig})",
    )
    target.add_argument(
        "--cdi-root",
        metavar="DIR",
        help="where the driver writes CDI spec files (default: {cdi_root} for --driver-cmd, /var/run/cdi otherwise)",
    )
    target.add_argument("--node-name", default="node-1", metavar="NAME", help="the node's name (default: node-1)")
    nodeflags.add_release_arguments(target, several=True)
    target.add_argument("--driver-name", metavar="NAME", help="the driver's name (default: learnt from GetInfo)")
    target.add_argument(
        "--device-class",
        metavar="NAME|FILE",
        help="DeviceClass the checks allocate from: an existing one, or a manifest file the suite applies (default:"
        " one selecting all the driver's devices)",
    )
    target.add_argument(
        "--claim",
        action="append",
        default=[],
        metavar="FILE",
        help="a claim the driver accepts, as for a real cluster: a ResourceClaimSpec or a ResourceClaim(Template)"
        " manifest (YAML; several documents = several claims; repeatable). Every check that makes a claim makes"
        " one of these (default: one device of the DeviceClass); a request without deviceClassName uses the"
        " suite's DeviceClass",
    )
    target.add_argument(
        "--node-restricted",
        action="store_true",
        help="embedded API server: node identities may write only their own node's ResourceSlices",
    )
    select = parser.add_argument_group("which checks")
    select.add_argument("--focus", metavar="REGEX", help="run only checks whose id or title matches")
    select.add_argument("--skip", metavar="REGEX", help="leave out checks whose id or title matches")
    select.add_argument(
        "--tags",
        action="append",
        default=[],
        metavar="TAG[,TAG]",
        help=f"run only checks with any of these tags: {', '.join(sorted(TAGS))}",
    )
    select.add_argument(
        "--list", action="store_true", help="list the selected checks with their level and rule; run nothing"
    )
    select.add_argument(
        "--strict",
        action="store_true",
        help="a failed should-check fails the run too (default: it is a warning, and only must-checks fail it)",
    )
    tune = parser.add_argument_group("tuning")
    tune.add_argument(
        "--idempotency-count",
        type=positive_int,
        default=DEFAULTS.idempotency_count,
        metavar="N",
        help=f"how often idempotency checks repeat a call (default: {DEFAULTS.idempotency_count})",
    )
    tune.add_argument(
        "--latency-warning",
        type=positive_float,
        default=DEFAULTS.latency_warning,
        metavar="SECONDS",
        help=f"warn when one prepare takes longer (default: {DEFAULTS.latency_warning:g}; the kubelet allows 45)",
    )
    tune.add_argument(
        "--republish-within",
        type=positive_float,
        default=DEFAULTS.republish_within,
        metavar="SECONDS",
        help=f"how soon wiped ResourceSlices must be back (default: {DEFAULTS.republish_within:g})",
    )
    tune.add_argument(
        "--check-timeout",
        type=positive_float,
        default=DEFAULTS.check_timeout,
        metavar="SECONDS",
        help=(
            "a check still running after this long fails; a wait it makes by design (a republish, a health"
            " timeout) adds to it"
            f" (default: {DEFAULTS.check_timeout:g})"
        ),
    )
    tune.add_argument(
        "--registration-timeout",
        type=positive_float,
        default=REGISTRATION_TIMEOUT,
        metavar="SECONDS",
        help="how long the driver may take from start to registered and connected (default: %(default)g)",
    )
    parser.add_argument("--junit", metavar="FILE", help="also write the results as JUnit XML to FILE")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (logs, sockets, state)")
    parser.add_argument(
        "--record-calls",
        metavar="FILE",
        help="append every gRPC call to the driver to this JSON-lines file, as kubelet-dra run does",
    )


def _driver_cmd(args: argparse.Namespace) -> str | None:
    """``--driver-cmd``, or the reference driver's command with ``--reference-driver``'s flags."""
    if args.reference_driver is None:
        return args.driver_cmd
    if args.driver_cmd is not None:
        raise UsageError("--reference-driver and --driver-cmd both name the driver under test", fix="give one of them")
    name = args.driver_name or REFERENCE_DRIVER_NAME
    return f"{REFERENCE_DRIVER.replace('{driver}', name)} {args.reference_driver}".strip()


def run(args: argparse.Namespace) -> int:
    claims = shapes.load(args.claim)
    tags = frozenset(tag.strip() for text in args.tags for tag in text.split(",") if tag.strip())
    selection = Selection(focus=args.focus, skip=args.skip, tags=tags)
    selected = selection.select(all_checks())
    kubelets = nodeflags.releases(args.kubelet_version)
    if args.list:
        _list(selected, json_output=args.output == "json")
        return 0
    node = nodeflags.release_options(
        argparse.Namespace(kubelet_version=kubelets[0].name, feature_gates=args.feature_gates)
    )
    target = Target(
        driver_cmd=_driver_cmd(args),
        registry_dir=args.registry_dir,
        cdi_root=args.cdi_root,
        kubeconfig=args.kubeconfig,
        node_name=args.node_name,
        **node,
        driver_name=args.driver_name,
        node_restricted=args.node_restricted,
        registration_timeout=args.registration_timeout,
        keep=args.keep,
        record_calls=args.record_calls,
    )
    options = SuiteOptions(
        idempotency_count=args.idempotency_count,
        latency_warning=args.latency_warning,
        republish_within=args.republish_within,
        check_timeout=args.check_timeout,
        device_class=args.device_class,
        strict=args.strict,
        claims=claims,
        outputs_dir=Path(args.junit).parent if args.junit else Path(),
    )
    text = args.output == "text"
    with output.quiet_logs(args.verbosity):
        runs = asyncio.run(_run(target, kubelets, options, selection, total=len(selected) * len(kubelets), live=text))
    if args.junit:
        report.write_junit(args.junit, runs)
    output.in_ci(report.SUITE_NAME, report.headline(runs), report.cases(runs), json_output=not text)
    if text:
        console = output.console()
        # in a pipe (a CI log) the lines printed per check are the table already: the headline sums them up
        console.print(report.table(runs) if console.is_terminal else report.headline(runs), markup=False)
        console.print(report.failures(runs), markup=False, highlight=False)
    else:
        output.print_json(runs.to_json())
    return runs.exit_code


async def _run(
    target: Target,
    kubelets: list[KubeletRelease],
    options: SuiteOptions,
    selection: Selection,
    *,
    total: int,
    live: bool,
) -> ReleaseRuns:
    if not live:
        return await run_releases(target, kubelets, options, selection)
    with report.LiveView(output.console(), total) as view:
        return await run_releases(target, kubelets, options, selection, on_start=view.started, on_result=view.finished)


def _list(checks: list[Check], *, json_output: bool) -> None:
    if json_output:
        output.print_json(
            [
                {
                    "id": c.id,
                    "title": c.title,
                    "level": c.level,
                    "rule": {"text": c.rule.text, "source": c.rule.source},
                    "tags": sorted(c.tags),
                    "reference": c.reference,
                    "needs": sorted(need.name for need in c.needs),
                }
                for c in checks
            ]
        )
        return
    console = output.console()
    for c in checks:
        console.print(f"{c.id}  [bold]{c.level}[/bold]  {escape(c.title)}", highlight=False)
        console.print(
            f"    [dim]{', '.join(sorted(c.tags))} · {c.reference} · {escape(str(c.rule))}[/dim]", highlight=False
        )


COMMAND = Command(
    name="conformance",
    description=(
        "Start the driver (--driver-cmd) or attach to a running one (--registry-dir + --kubeconfig), probe it with a"
        " simulated kubelet and run the conformance checks: registration, versions, prepare/unprepare, CDI, slices,"
        " health, lifecycle. Each check is a must (a pod or the kubelet would fail) or a should (a recommendation:"
        " its failure is a warning). Exit 0 when no must-check failed (--strict: no check failed), 1 when one did,"
        " 2 on a usage error. --kubelet-version 1.36,1.37 runs the suite once per release."
    ),
    add_arguments=add_arguments,
    run=run,
)
