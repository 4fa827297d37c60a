"""``kubelet-dra call SOCKET METHOD``: one kubelet gRPC call by hand, with its timing, raw error and verdict.

What csc and grpcurl are for CSI and gRPC, for a DRA driver's sockets: no ``.proto`` files to find,
the kubelet's deadlines and service negotiation, and a verdict with the DRA manager's own words.
Exit 0 when the kubelet would accept the answer, 1 when it would not, 64 + the gRPC status code
when the call failed (grpcurl's convention), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

from google.protobuf.message import Message

from kubelet_dra.cli import output
from kubelet_dra.cli.command import Command
from kubelet_dra.peers.errors import ConfigError, UsageError
from kubelet_dra.peers.kube.client import KubeClient
from kubelet_dra.peers.log import get_logger
from kubelet_dra.workbench.call import handcall
from kubelet_dra.workbench.call import request as callrequest
from kubelet_dra.workbench.call.handcall import CallOptions, HandCall

EXAMPLES = """\
examples:
  kubelet-dra call /var/lib/kubelet/plugins_registry/gpu.example.com-reg.sock info
  kubelet-dra call /tmp/reg/gpu.example.com-reg.sock prepare --claim default/gpu-claim --kubeconfig /tmp/kc
  kubelet-dra call /var/lib/kubelet/plugins/gpu.example.com/dra.sock unprepare --claim default/gpu-claim/<uid>
  kubelet-dra call /tmp/reg/gpu.example.com-reg.sock watch --for 30
  kubelet-dra call /tmp/dra.sock prepare --data @request.json --service v1beta1.DRAPlugin
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter  # keeps the examples' lines
    parser.description = textwrap.fill(parser.description or "", 79)
    parser.epilog = EXAMPLES
    parser.add_argument("socket", help="a driver's registration socket (…-reg.sock) or its DRA service socket")
    parser.add_argument(
        "method",
        help=f"one of {', '.join(callrequest.METHODS)} (or {', '.join(callrequest.KNOWN)})",
    )
    parser.add_argument(
        "--claim",
        action="append",
        default=[],
        metavar="NS/NAME[/UID]",
        help="a claim for prepare/unprepare, repeatable (one call for all); without /UID, read from the API server",
    )
    parser.add_argument(
        "--data",
        metavar="JSON",
        help="the whole request as protobuf JSON, @FILE or - for stdin (instead of --claim; for notify too)",
    )
    parser.add_argument("--kubeconfig", help="where to read claim UIDs (default: in-cluster, then ~/.kube/config)")
    parser.add_argument(
        "--service",
        metavar="ID",
        default="",
        help="call this DRA service (v1.DRAPlugin, v1beta1.DRAPlugin) instead of the one the kubelet would pick",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="the call's deadline (default: the kubelet's: GetInfo 1 s, notify 5 s, prepare/unprepare 45 s)",
    )
    parser.add_argument(
        "--for",
        dest="watch_for",
        type=float,
        default=handcall.DEFAULT_WATCH_FOR,
        metavar="SECONDS",
        help="how long to follow the health stream (watch; default: %(default)g)",
    )
    parser.add_argument(
        "--latency-warning",
        type=float,
        default=handcall.DEFAULT_LATENCY_WARNING,
        metavar="SECONDS",
        help="note an answer slower than this (default: %(default)g)",
    )


def _data(text: str) -> tuple[str, str]:
    """(JSON text, where it came from) for ``--data``."""
    if text == "-":
        return sys.stdin.read(), "stdin"
    if text.startswith("@"):
        path = Path(text[1:])
        try:
            return path.read_text(), str(path)
        except OSError as err:
            raise ConfigError(
                f"cannot read the request: {err.strerror}", where=str(path), fix="give a readable file"
            ) from err
    return text, "--data"


async def _request(method: str, args: argparse.Namespace) -> Message:
    if args.data is not None and args.claim:
        raise UsageError("--data and --claim both give the request", fix="use one of them")
    if args.data is not None:
        text, where = _data(args.data)
        return callrequest.request_from_json(method, text, where)
    if method in (callrequest.PREPARE, callrequest.UNPREPARE):
        if not args.claim:
            raise UsageError(f"{method} needs claims", fix="add --claim NS/NAME[/UID] (repeatable) or --data JSON")
        clients: list[KubeClient] = []

        def kube() -> KubeClient:
            if not clients:
                clients.append(KubeClient.from_kubeconfig(args.kubeconfig))
            return clients[0]

        try:
            return await callrequest.claims_request(method, args.claim, kube)
        finally:
            for client in clients:
                client.close()
    if args.claim:
        raise UsageError(f"--claim is for prepare and unprepare, not {method}", fix="drop --claim")
    if method == callrequest.NOTIFY:
        return callrequest.request_from_json(method, '{"plugin_registered": true}', "default")
    return callrequest.request_class(method)()


def _print_message(message: dict[str, Any]) -> None:
    devices = message.get("devices") or []
    line = ", ".join(
        f"{d.get('device', {}).get('pool_name', '')}/{d.get('device', {}).get('device_name', '')} {d.get('health', '')}"
        + (f" ({d['message']})" if d.get("message") else "")
        for d in devices
    )
    output.console().print(f"health: {line or 'no devices'}", markup=False)


def _claim_lines(response: Any) -> list[str]:
    """One line per claim of a prepare/unprepare answer."""
    lines = []
    for uid, result in sorted(((response or {}).get("claims") or {}).items()):
        if result.get("error"):
            lines.append(f"  claim {uid}: error: {result['error']}")
            continue
        devices = result.get("devices")
        if devices is None:
            lines.append(f"  claim {uid}: unprepared")
            continue
        for device in devices or [{}]:
            if not device:
                lines.append(f"  claim {uid}: no devices")
                continue
            where = f"{device.get('pool_name', '')}/{device.get('device_name', '')}"
            requests = ",".join(device.get("request_names") or []) or "(all)"
            cdi = " ".join(device.get("cdi_device_ids") or []) or "no CDI devices"
            lines.append(f"  claim {uid}: {where} requests {requests}: {cdi}")
    return lines


def render(result: HandCall) -> None:
    say = output.console().print
    say(f"{result.method} on {result.socket}", markup=False)
    if result.route:
        say(f"  route: {result.route}", markup=False)
    for record in result.records:
        took = f"{record.duration * 1000:.0f} ms"
        say(f"  request {record.request_id} {record.method} → {record.status} in {took}", markup=False)
    last = result.records[-1] if result.records else None
    if result.error:
        say(f"  error: {result.error}", markup=False)
    elif last is not None and not last.streaming:
        claim_lines = (
            _claim_lines(last.response) if result.method in (callrequest.PREPARE, callrequest.UNPREPARE) else []
        )
        for line in claim_lines or json.dumps(last.response, indent=2, sort_keys=True).splitlines():
            say(line if claim_lines else f"  {line}", markup=False)
    for note in result.notes:
        say(f"  note: {note}", markup=False)
    if result.verdict:
        say(f"✗ {result.verdict}", markup=False)
    elif result.status == "OK":
        say("✓ the kubelet would accept this answer", markup=False)


def run(args: argparse.Namespace) -> int:
    method = callrequest.method_name(args.method)
    for flag in ("timeout", "watch_for", "latency_warning"):
        value = getattr(args, flag)
        if value is not None and value <= 0:
            raise UsageError(f"--{flag.replace('_', '-')} must be positive, not {value:g}", fix="give seconds > 0")
    if not Path(args.socket).exists():
        raise UsageError(
            f"{args.socket} does not exist",
            fix="give a driver's registration socket (e.g. /var/lib/kubelet/plugins_registry/<driver>-reg.sock)"
            " or its service socket",
        )
    options = CallOptions(args.timeout, args.service, args.watch_for, args.latency_warning)
    streaming = args.output != "json"
    if streaming and method == callrequest.WATCH:
        output.console().print(f"following the health stream of {args.socket} for {args.watch_for:g} s", markup=False)
    result = asyncio.run(_run(args, method, options, streaming))
    if args.output == "json":
        output.print_json(result.to_json())
    else:
        render(result)
    return result.exit_code


async def _run(args: argparse.Namespace, method: str, options: CallOptions, streaming: bool) -> HandCall:
    request = await _request(method, args)
    on_message = _print_message if streaming else _ignore
    return await handcall.hand_call(args.socket, method, request, options, get_logger("call"), on_message)


def _ignore(_: dict[str, Any]) -> None:
    return None


COMMAND = Command(
    name="call",
    description=(
        "Call a DRA driver's socket as the kubelet does, one call: the kubelet's deadlines, its service"
        " negotiation (through the registration socket's GetInfo) and a request ID. Prints the timing, the raw"
        " answer or error, and whether the kubelet would accept it, in the DRA manager's words. Exit 0 accepted,"
        " 1 not accepted, 64 + gRPC code when the call failed, 2 usage error."
    ),
    add_arguments=add_arguments,
    run=run,
)
