"""What the tap shows while it runs: the mirrored drivers and the calls, live in a terminal or line by line.

Like ``debug``'s view: a rich layout redrawn in a terminal, one line per call in a pipe or a CI
log, and the same data as JSON at the end (``--output json``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from rich.console import Group
from rich.markup import escape
from rich.table import Table

from kubelet_dra.peers.api.calls import CallRecord
from kubelet_dra.peers.log import clock_time
from kubelet_dra.workbench.tap.forward import OpenCall
from kubelet_dra.workbench.tap.mirror import MirrorView

RECENT_CALLS = 15


def method_name(record: CallRecord) -> str:
    return record.method.rsplit("/", 1)[-1]


def call_line(record: CallRecord) -> str:
    """One call in a line: when, which request, which driver, what, how it ended, how long it took."""
    details = f" {record.details!r}" if record.details else ""
    messages = f" {len(record.response or [])} message(s)" if record.streaming else ""
    driver = record.driver or "registration"
    return (
        f"{clock_time(record.started_at)} #{record.request_id} {driver} {method_name(record)}"
        f" {record.status}{details}{messages} {record.duration * 1000:.1f} ms"
    )


def render(mirrors: Sequence[MirrorView], records: Sequence[CallRecord], open_calls: Sequence[OpenCall] = ()) -> Group:
    drivers = Table(title="Drivers through the tap", title_justify="left")
    for column in ("driver", "driver's registration socket", "mirrored as", "driver's endpoint", "tap's endpoint"):
        drivers.add_column(column, overflow="fold")
    for mirror in mirrors:
        drivers.add_row(
            escape(mirror.driver or "(not asked yet)"),
            escape(mirror.driver_socket),
            escape(mirror.mirror_socket),
            escape(mirror.driver_endpoint),
            escape(mirror.tap_endpoint),
        )
    totals = Table(title="Calls", title_justify="left")
    for column in ("driver", "method", "status", "count"):
        totals.add_column(column)
    counted = Counter((record.driver or "registration", method_name(record), record.status) for record in records)
    for (driver, method, status), count in sorted(counted.items()):
        color = "green" if status == "OK" else "red"
        totals.add_row(escape(driver), method, f"[{color}]{status}[/{color}]", str(count))
    in_progress = Table(title="Open calls and streams", title_justify="left")
    for column in ("since", "request", "driver", "method", "answers so far"):
        in_progress.add_column(column)
    for call in open_calls:
        in_progress.add_row(
            clock_time(call.started_at),
            f"#{call.request_id}",
            escape(call.driver or "registration"),
            call.method.rsplit("/", 1)[-1],
            str(call.messages),
        )
    recent = Table(title=f"Last {RECENT_CALLS} calls", title_justify="left", show_header=False, box=None)
    recent.add_column("call", overflow="fold")
    for record in records[-RECENT_CALLS:]:
        recent.add_row(escape(call_line(record)))
    return Group(drivers, in_progress, totals, recent)


def to_json(mirrors: Sequence[MirrorView], records: Sequence[CallRecord]) -> dict[str, Any]:
    return {"drivers": [mirror.to_json() for mirror in mirrors], "calls": [record.to_json() for record in records]}
