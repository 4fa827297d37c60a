"""``kubelet-dra demo``: the whole DRA flow on one machine, in one command, with a readable result."""

from __future__ import annotations

import argparse
import asyncio
import signal

from rich.markup import escape
from rich.table import Table

from kubelet_dra.cli import nodeflags, output
from kubelet_dra.cli.command import Command
from kubelet_dra.kubelet.release import release
from kubelet_dra.peers import log
from kubelet_dra.workbench.demo import Demo, Step, workdir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    nodeflags.add_kubelet_version_argument(parser)
    parser.add_argument(
        "--keep",
        action="store_true",
        help="leave everything running after the flow and print the kubeconfig, until Ctrl-C",
    )


def run(args: argparse.Namespace) -> int:
    with workdir(args.keep) as directory:
        quiet = args.verbosity == 0
        log_file = (directory / "kubelet-dra.log").open("w") if quiet else None
        if log_file is not None:
            log.configure(0, log_file)  # keep the step list readable; the log stays in the work dir
        kubelet = release(args.kubelet_version)
        demo = Demo(directory, report=_report_step if args.output == "text" else _ignore, release=kubelet)
        if args.output == "text":
            output.console().print(
                f"[bold]kubelet-dra demo[/bold]: one node (kubelet {kubelet.version}), one driver, one pod"
                f"  (work dir {directory})"
            )
        try:
            steps = asyncio.run(demo.run(_wait_for_ctrl_c(demo) if args.keep else None))
        finally:
            if log_file is not None:
                log_file.close()
        if args.output == "json":
            listed = [{"step": step.title, "seconds": round(step.seconds, 3), "detail": step.detail} for step in steps]
            output.print_json({"workdir": str(directory), "steps": listed})
        else:
            _summary(steps)
    return 0


def _report_step(step: Step) -> None:
    detail = escape(step.detail)  # CDI IDs and paths are text, not rich markup
    output.console().print(f"  [green]✓[/green] {step.title} [dim]({step.seconds:.2f} s)[/dim]: {detail}")


def _ignore(step: Step) -> None:
    del step


def _summary(steps: list[Step]) -> None:
    table = Table(title="kubelet-dra demo: every step held")
    table.add_column("#", justify="right")
    table.add_column("Step")
    table.add_column("Took", justify="right")
    for index, step in enumerate(steps, 1):
        table.add_row(str(index), step.title, f"{step.seconds:.2f} s")
    table.add_row("", "[bold]total[/bold]", f"[bold]{sum(step.seconds for step in steps):.2f} s[/bold]")
    output.console().print(table)


def _wait_for_ctrl_c(demo: Demo):
    async def wait() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        output.console().print(
            f"Still running. Try: [bold]export KUBECONFIG={demo.kubeconfig}; kubectl get resourceslices,pods[/bold]"
            f"\nWork dir {demo.workdir} is kept. Press Ctrl-C to stop."
        )
        await stop.wait()

    return wait


COMMAND = Command(
    name="demo",
    description=(
        "Start the embedded API server, the simulated node, the offline control plane and the bundled reference"
        " driver; run one pod with a template claim through registration, slice publishing, allocation,"
        " NodePrepareResources, Running, deletion and NodeUnprepareResources; print each step as it happens and a"
        " summary; leave nothing behind (unless --keep)."
    ),
    add_arguments=add_arguments,
    run=run,
)
