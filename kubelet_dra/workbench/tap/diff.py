"""Compare two ``--record-calls`` files call by call, after taking out what always differs between runs.

Two recordings of the same pod lifecycle (a tap of the real kubelet, a ``kubelet-dra run``) differ
in request IDs, times, socket paths, UIDs, generated claim names and pool (node) names. Those are
replaced by placeholders numbered in order of first appearance in each file (``<uid-1>``,
``<claim-1>``, ``<pool-1>``), so the same call in the same place reads the same. Calls are listed
driver by driver, and each driver's registration handshakes, DRA calls and health streams apart,
since the order between them is the kubelet's goroutines' chance (a driver just registered may be
called before its NotifyRegistrationStatus returns, or after, and the gap grows with the machine's
load); within each, in the order they started (calls that overlap or follow within 50 ms in name
order). Runs of the same call (the real kubelet's health watch every 5 s) are folded into one line
with a count. What is left is shown as a unified diff.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import attrs

from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.workbench.tap.mirror import GET_INFO

HEALTH_STREAM = "NodeWatchResources"
REGISTRATION = ".Registration/"
CONCURRENT = 0.05
"""Seconds between the end of a burst of calls and the start of the next call under which it joins the burst."""
_UID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_SOCKET_PATH = re.compile(r"/[^\s\"'()\[\]]*/(?P<name>[^/\s\"'()\[\]]+\.sock)\b")
"""A socket's absolute path in a message (a kubelet's refusal names the endpoint): its dir is the run's, and through
the tap the kubelet names the tap's socket where it would name the driver's."""


_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "method": (str,),
    "status": (str,),
    "started_at": (int, float),
    "duration": (int, float, type(None)),
    "details": (str, type(None)),
}
"""The fields the comparison reads, and what a recorder writes in them (``duration`` and ``details`` may be absent)."""
_REQUIRED = ("method", "status", "started_at")
_FIX = "give a file written by --record-calls or kubelet-dra tap"


def load(path: str | Path) -> list[dict[str, Any]]:
    """The records of a JSON-lines file; a line that is not a record is a clear error naming it."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise ConfigError(f"cannot read the call record file: {err.strerror}", where=str(path), fix=_FIX) from err
    records = []
    for number, raw in enumerate(data.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            raise ConfigError("not UTF-8 text", where=f"{path}:{number}", fix=_FIX) from None
        except json.JSONDecodeError as err:
            raise ConfigError(f"not JSON: {err.msg}", where=f"{path}:{number}", fix=_FIX) from None
        except RecursionError:
            raise ConfigError("nested too deep to be a call record", where=f"{path}:{number}", fix=_FIX) from None
        if problem := _record_problem(record):
            raise ConfigError(problem, where=f"{path}:{number}", fix=_FIX)
        records.append(record)
    return records


def _record_problem(record: Any) -> str | None:
    if not isinstance(record, dict) or not set(_REQUIRED) <= record.keys():
        return f"not a call record (it needs {', '.join(_REQUIRED[:-1])} and {_REQUIRED[-1]})"
    for field, types in _FIELD_TYPES.items():
        value = record.get(field)
        if isinstance(value, bool) or not isinstance(value, types):
            return f"{field} is {json.dumps(value)[:40]}, not a {types[0].__name__.replace('str', 'string')}"
    return None


class _Placeholders:
    """One file's stand-ins: each distinct value of a kind gets the next number of that kind."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str], str] = {}
        self._counts: dict[str, int] = {}

    def __call__(self, kind: str, value: str) -> str:
        key = (kind, value)
        if key not in self._seen:
            self._counts[kind] = self._counts.get(kind, 0) + 1
            self._seen[key] = f"<{kind}-{self._counts[kind]}>"
        return self._seen[key]

    def text(self, value: str) -> str:
        value = _SOCKET_PATH.sub(lambda match: f"<dir>/{match['name']}", value)
        return _UID.sub(lambda match: self("uid", match.group()), value)


def _normalize(value: Any, names: _Placeholders, key: str = "", in_claims: bool = False) -> Any:
    if isinstance(value, dict):
        return {names.text(name): _normalize(item, names, name, key == "claims") for name, item in value.items()}
    if isinstance(value, list):
        return [_normalize(item, names, key, in_claims) for item in value]
    if not isinstance(value, str):
        return value
    if key == "name" and in_claims:
        return names("claim", value)
    if key == "pool_name":
        return names("pool", value)
    if key == "endpoint" and os.path.isabs(value):
        return f"<dir>/{os.path.basename(value)}"
    return names.text(value)


def _method_name(method: str) -> str:
    service, _, name = method.rpartition("/")
    return f"{service.lstrip('/').rsplit('.', 1)[-1]}/{name}" if service else name


def _burst_order(line: str) -> tuple[bool, str]:
    return (not line.startswith(f"{_method_name(GET_INFO)} "), line)


def call_lines(
    records: Iterable[dict[str, Any]], *, concurrent: float = CONCURRENT, names: _Placeholders | None = None
) -> list[str]:
    """One line per call in start order, normalized; repeats of the same line folded into ``(xN)``.

    Calls that overlap or follow each other within ``concurrent`` seconds are one burst, ordered by their text:
    which of two such calls starts first (the health stream a kubelet opens while it notifies the driver) is chance.
    A ``GetInfo`` leads its burst: the kubelet asks it before it calls the driver at all, and the health stream it
    opens at once after can fall in the same burst on one side and in the next on the other. ``names`` numbers
    placeholders across several calls (a whole file's), else afresh.
    """
    names = names or _Placeholders()
    bursts: list[list[str]] = []
    burst_end = float("-inf")
    for record in sorted(records, key=lambda record: record["started_at"]):
        if record["started_at"] > burst_end + concurrent or not bursts:
            bursts.append([])
        burst_end = max(burst_end, record["started_at"] + float(record.get("duration") or 0.0))
        request = json.dumps(_normalize(record.get("request"), names), sort_keys=True)
        response = json.dumps(_normalize(record.get("response"), names), sort_keys=True)
        details = f" {names.text(record.get('details') or '')!r}" if record.get("details") else ""
        bursts[-1].append(
            f"{_method_name(record['method'])} {record['status']}{details} request={request} response={response}"
        )
    lines = [line for burst in bursts for line in sorted(burst, key=_burst_order)]
    folded: list[str] = []
    count = 0
    for index, line in enumerate(lines):
        count += 1
        if index + 1 == len(lines) or lines[index + 1] != line:
            folded.append(line if count == 1 else f"{line} (x{count})")
            count = 0
    return folded


def by_driver(records: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Each driver's records, by the name its recorder wrote or, for a call made before the name was known (the
    node's GetInfo), the name GetInfo returned for that endpoint."""
    records = list(records)
    names = {
        record.get("endpoint", ""): (record.get("response") or {}).get("name", "")
        for record in records
        if record["method"].endswith("/GetInfo") and isinstance(record.get("response"), dict)
    }
    found: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        driver = record.get("driver") or names.get(record.get("endpoint", ""), "")
        found.setdefault(str(driver), []).append(record)
    return found


def kinds(records: Iterable[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """A driver's registration calls, its DRA calls, its health streams: each kind in its own order, since a kubelet
    may call a driver it has just registered before its NotifyRegistrationStatus returns, or after."""
    found: dict[str, list[dict[str, Any]]] = {"registration": [], "dra": [], "health": []}
    for record in records:
        method = record["method"]
        kind = "health" if method.endswith(HEALTH_STREAM) else "registration" if REGISTRATION in method else "dra"
        found[kind].append(record)
    return list(found.values())


def recording_lines(drivers: dict[str, list[dict[str, Any]]], *, named: bool) -> list[str]:
    """A recording's lines from its records ``by_driver``: driver by driver in name order (each line led by the
    driver's name when ``named``), each driver's kinds apart (``kinds``), placeholders numbered across the file."""
    names = _Placeholders()
    lines: list[str] = []
    for driver, found in sorted(drivers.items()):
        for group in kinds(found):
            lines += [f"{driver}: {line}" if named else line for line in call_lines(group, names=names)]
    return lines


@attrs.frozen
class CallsDiff:
    a: str
    b: str
    a_lines: tuple[str, ...]
    b_lines: tuple[str, ...]

    @property
    def same(self) -> bool:
        return self.a_lines == self.b_lines

    def unified(self) -> list[str]:
        return list(difflib.unified_diff(self.a_lines, self.b_lines, self.a, self.b, lineterm="", n=1000))

    def to_json(self) -> dict[str, Any]:
        return {
            "a": self.a,
            "b": self.b,
            "same": self.same,
            "diff": self.unified(),
            "a_calls": list(self.a_lines),
            "b_calls": list(self.b_lines),
        }


def diff(a: str | Path, b: str | Path) -> CallsDiff:
    """The two files' lines, each led by its driver's name when the two together name more than one driver."""
    a_drivers, b_drivers = by_driver(load(a)), by_driver(load(b))
    named = len(a_drivers.keys() | b_drivers.keys()) > 1
    return CallsDiff(
        str(a),
        str(b),
        tuple(recording_lines(a_drivers, named=named)),
        tuple(recording_lines(b_drivers, named=named)),
    )
