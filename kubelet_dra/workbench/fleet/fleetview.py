"""The fleet at a glance: a table with a row per node and a one-line tally, redrawn as the nodes change."""

from __future__ import annotations

from collections.abc import Sequence

from rich.table import Table
from rich.text import Text

from kubelet_dra.workbench.fleet.fleet import NodeRow

ERROR_WIDTH = 70


def tally(rows: Sequence[NodeRow]) -> str:
    """``50 nodes, 50 with a driver registered, 50 pods running, 50 claims prepared, 0 with errors``."""
    registered = sum(1 for row in rows if row.drivers)
    failing = sum(1 for row in rows if row.last_error)
    return (
        f"{len(rows)} nodes, {registered} with a driver registered, {sum(row.pods for row in rows)} pods running,"
        f" {sum(row.claims for row in rows)} claims prepared, {failing} with errors"
    )


def table(rows: Sequence[NodeRow]) -> Table:
    view = Table(title=tally(rows), title_justify="left", expand=False)
    for column in ("node", "drivers registered", "driver process", "pods", "claims", "last error"):
        view.add_column(column, justify="right" if column in ("pods", "claims") else "left")
    for row in rows:
        error = row.last_error if len(row.last_error) <= ERROR_WIDTH else row.last_error[: ERROR_WIDTH - 1] + "…"
        view.add_row(
            row.name,
            Text(", ".join(row.drivers) or "none", style="green" if row.drivers else "yellow"),
            Text(row.driver_process, style="red" if row.driver_process.startswith("exited") else ""),
            str(row.pods),
            str(row.claims),
            Text(error, style="red"),
        )
    return view
