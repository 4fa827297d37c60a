"""``kubelet-dra checkpoint show|verify FILE``: read a kubelet's ``dra_manager_state`` (docs/checkpoint.md).

Operators need this when a kubelet refuses to start with "checkpoint is corrupted", or to see which claims a
node still holds prepared; driver authors use it to compare what the kubelet recorded with what they returned.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.markup import escape
from rich.table import Table

from kubelet_dra.cli import add_global_flags, output
from kubelet_dra.cli.command import Command
from kubelet_dra.kubelet.cm.dra.state.checkpoint import (
    CheckpointCorrupted,
    ClaimInfoState,
    DeviceState,
    decode,
    encode,
    read_bytes,
)


def describe(claim: ClaimInfoState) -> dict[str, Any]:
    """One entry as the JSON output shows it: the checkpoint's content with snake_case names."""
    return {
        "claim_uid": claim.claim_uid,
        "claim_name": claim.claim_name,
        "namespace": claim.namespace,
        "pod_uids": sorted(claim.pod_uids),
        "drivers": {
            driver: [
                {
                    "pool_name": device.pool_name,
                    "device_name": device.device_name,
                    "share_id": device.share_id,
                    "request_names": list(device.request_names),
                    "cdi_device_ids": list(device.cdi_device_ids),
                }
                for device in devices
            ]
            for driver, devices in sorted(claim.driver_state.items())
        },
    }


def table(file: Path, claims: list[ClaimInfoState]) -> Table:
    """One row per device (or per driver without devices), so duplicated devices after re-prepares stand out."""
    result = Table(title=f"Prepared claims in {escape(str(file))}", show_lines=True)
    for column in ("Claim", "Pods", "Driver", "Pool/Device", "Requests", "CDI devices"):
        result.add_column(column, overflow="fold")
    for claim in claims:
        name = f"{escape(claim.namespace)}/{escape(claim.claim_name)}\n[dim]{escape(claim.claim_uid)}[/dim]"
        pods = escape("\n".join(sorted(claim.pod_uids))) or "(none)"
        for driver, devices in sorted(claim.driver_state.items()):
            for device in devices or (None,):
                result.add_row(name, pods, escape(driver), *device_cells(device))
        if not claim.driver_state:
            result.add_row(name, pods, "(no drivers)", "", "", "")
    return result


def device_cells(device: DeviceState | None) -> tuple[str, str, str]:
    """Cells are rich markup, so file content is escaped: a hand-edited ``[/x]`` must not break the table."""
    if device is None:
        return ("(no devices)", "", "")
    place = escape(f"{device.pool_name}/{device.device_name}")
    if device.share_id is not None:
        place += f"\n[dim]share {escape(device.share_id)}[/dim]"
    return place, escape("\n".join(device.request_names)) or "(all)", escape("\n".join(device.cdi_device_ids))


def show(args: argparse.Namespace) -> int:
    claims = decode(read_bytes(args.file), where=str(args.file))
    if args.output == "json":
        output.print_json([describe(claim) for claim in claims])
    elif claims:
        output.console().print(table(args.file, claims))
    else:
        output.console().print(f"{args.file}: no prepared claims", markup=False)
    return 0


def verify(args: argparse.Namespace) -> int:
    """Exit 0 when a 1.36 kubelet would load the file, 1 (from ``CheckpointCorrupted``) when it would refuse it."""
    data = read_bytes(args.file)
    try:
        claims = decode(data, where=str(args.file))
    except CheckpointCorrupted as err:
        if args.output != "json":
            raise
        output.print_json({"file": str(args.file), "valid": False, "error": str(err)})
        return err.exit_code
    result = {
        "file": str(args.file),
        "valid": True,
        "claims": len(claims),
        # A file the kubelet wrote re-encodes to the same bytes; a hand-edited one may not (still loadable).
        "canonical": encode(claims) == data,
    }
    if args.output == "json":
        output.print_json(result)
    else:
        form = "as a kubelet writes it" if result["canonical"] else "loadable, but not byte-identical to kubelet output"
        output.console().print(f"{args.file}: valid checkpoint, {len(claims)} claim(s), {form}", markup=False)
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, run, text in (
        ("show", show, "list the claims, pods and prepared devices recorded in the file"),
        (
            "verify",
            verify,
            "check the checksum and JSON as a kubelet does at start (exit 0 ok, 1 corrupt, 2 unreadable)",
        ),
    ):
        action = actions.add_parser(name, help=text, description=text)
        add_global_flags(action, defaults=False)
        action.add_argument(
            "file", type=Path, metavar="FILE", help="a dra_manager_state file, e.g. from /var/lib/kubelet"
        )
        action.set_defaults(run=run)


COMMAND = Command(
    name="checkpoint",
    description=(
        "Read the DRA manager checkpoint a kubelet (or kubelet-dra) keeps in its root dir: `show` lists the"
        " prepared claims and their devices, `verify` checks it the way a kubelet does when it starts."
    ),
    add_arguments=add_arguments,
    run=show,
)
