"""``kubelet-dra tap``: see every call a kubelet makes to its drivers, by standing between them.

The drivers register in ``--driver-registry-dir``; the tap mirrors each registration socket into
the kubelet's registry dir, forwards every call both ways unchanged and records it in the
``--record-calls`` JSON-lines format. No kubelet restart: the kubelet just sees the drivers'
sockets appear through the tap. See docs/tap.md for the recipe on a real node.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import time

from rich.live import Live
from rich.markup import escape

from kubelet_dra.cli import output
from kubelet_dra.cli.command import Command
from kubelet_dra.peers.api.calls import CALLS_KEPT, CallRecord, CallRecorder
from kubelet_dra.peers.errors import UsageError
from kubelet_dra.workbench.debug.inventory import KUBELET_REGISTRY_DIR
from kubelet_dra.workbench.tap import MirrorView, Tap
from kubelet_dra.workbench.tap.tapview import call_line, render, to_json

REFRESH_PERIOD = 0.5


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--driver-registry-dir",
        required=True,
        metavar="DIR",
        help="where the drivers register instead (their registration sockets); outside the kubelet's registry dir",
    )
    parser.add_argument(
        "--registry-dir",
        default=KUBELET_REGISTRY_DIR,
        metavar="KUBELET_DIR",
        help="the kubelet's plugin registry dir, where the tap mirrors each registration socket (default: %(default)s)",
    )
    parser.add_argument(
        "--socket-dir",
        metavar="DIR",
        help="where the tap serves its own service sockets (default: <registry dir>/../plugins/kubelet-dra-tap)",
    )
    parser.add_argument(
        "--record-calls",
        metavar="FILE",
        help="append every call and stream to this JSON-lines file as it ends (the format of run --record-calls)",
    )
    parser.add_argument(
        "--for",
        dest="duration",
        type=float,
        metavar="SECONDS",
        help="tap this long, then remove the mirrored sockets and exit; default: until Ctrl-C or SIGTERM",
    )


def run(args: argparse.Namespace) -> int:
    if args.duration is not None and args.duration <= 0:
        raise UsageError("the tap time must be positive", where="--for", fix="give a number of seconds")
    recorder = CallRecorder(args.record_calls, keep=CALLS_KEPT)  # the file has them all; memory the last ones
    tap = Tap(args.driver_registry_dir, args.registry_dir, socket_dir=args.socket_dir, recorder=recorder)
    with output.quiet_logs(args.verbosity):
        mirrors = asyncio.run(watch(tap, args.output, args.duration))
    if args.output == "json":
        output.print_json(to_json(mirrors, recorder.records()))
    return 0


async def watch(tap: Tap, output_format: str, duration: float | None) -> list[MirrorView]:
    """Run the tap until Ctrl-C, SIGTERM or the end of ``duration``, showing the calls as they end; the drivers it
    mirrored last (stopping removes the mirrors)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    deadline = time.monotonic() + duration if duration else float("inf")
    console = output.console()
    live = output_format == "text" and console.is_terminal
    streaming = output_format == "text" and not live
    shown = 0
    async with tap:
        view = Live(render(tap.mirrors(), []), console=console, transient=False) if live else None
        with view if view is not None else contextlib.nullcontext():
            while not stop.is_set() and time.monotonic() < deadline:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), min(REFRESH_PERIOD, max(0.0, deadline - time.monotonic())))
                records = tap.recorder.records()
                if view is not None:
                    view.update(render(tap.mirrors(), records, tap.open_calls()))
                shown = _print_calls(records, shown, enabled=streaming)
        mirrors = tap.mirrors()
    # Streams still open when the tap stops end now, cancelled: their records come last.
    _print_calls(tap.recorder.records(), shown, enabled=streaming)
    return mirrors


def _print_calls(records: list[CallRecord], shown: int, *, enabled: bool) -> int:
    """Without a terminal (a pipe, a CI log) each call is printed as one line once it has ended."""
    if enabled:
        for record in records[shown:]:
            output.console().print(escape(call_line(record)))
    return len(records)


COMMAND = Command(
    name="tap",
    description=(
        "Stand between a kubelet and its DRA drivers: the drivers register in --driver-registry-dir, the tap"
        " mirrors each registration socket into the kubelet's registry dir, answers GetInfo with the driver's"
        " answer but its own endpoint, and forwards every call (registration, prepare, unprepare, health"
        " streams, unknown methods) unchanged, recording each in the --record-calls JSON-lines format. The"
        " mirrored sockets go when the drivers' go, and when the tap stops. No kubelet restart needed."
    ),
    add_arguments=add_arguments,
    run=run,
)
