"""Every gRPC call and stream made to a driver, as data: queryable in-process, exportable as JSON lines.

The registration handshake (GetInfo, NotifyRegistrationStatus) and the DRA calls and streams are
recorded alike, so a trace shows a driver's whole life. A record holds the full method, the
request and response as JSON (protobuf's JSON mapping, as they went over the wire, i.e. in the
plugin's API version), the gRPC status, the duration, the per-process request ID, and which
driver instance was called. It lives below both the registration and the plugins packages,
which each record their own calls.
"""

from __future__ import annotations

import itertools
import json
import os
from collections import deque
from pathlib import Path
from typing import Any

import attrs
from google.protobuf import json_format
from google.protobuf.message import Message

from kubelet_dra.peers.datafiles import open_private, refusal, write_all
from kubelet_dra.peers.errors import ConfigError
from kubelet_dra.peers.log import get_logger

_request_ids = itertools.count(1)


def next_request_id() -> int:
    """The process-wide request ID counter shared by all calls and streams."""
    return next(_request_ids)


CALLS_KEPT = 1000
"""What a program that runs for days keeps in memory of its calls (a recorder's ``keep``, a stream's messages)."""


def message_json(message: Message) -> dict[str, Any]:
    """A protobuf message as JSON with the ``.proto`` field names, defaults included."""
    return json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


@attrs.frozen
class CallRecord:
    request_id: int
    driver: str
    endpoint: str
    method: str
    """Full method path, e.g. ``/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources``."""
    streaming: bool
    _request: Message | dict[str, Any] = attrs.field(alias="request")
    _response: Message | dict[str, Any] | list[dict[str, Any]] | None = attrs.field(alias="response")
    status: str
    """gRPC status code name: ``OK``, ``UNAVAILABLE``, ``DEADLINE_EXCEEDED`` …"""
    details: str
    started_at: float
    """Wall-clock start, seconds since the epoch."""
    duration: float

    @property
    def request(self) -> dict[str, Any]:
        """The request as JSON, converted when read: a node makes thousands of calls and few are ever read."""
        return _as_json(self._request)

    @property
    def response(self) -> dict[str, Any] | list[dict[str, Any]] | None:
        """The response as JSON; for a stream the list of messages received; ``None`` when the call failed."""
        return None if self._response is None else _as_json(self._response)

    def to_json(self) -> dict[str, Any]:
        fields = {name.lstrip("_"): value for name, value in attrs.asdict(self, recurse=False).items()}
        return {**fields, "request": self.request, "response": self.response}


def _as_json(value: Message | Any) -> Any:
    return message_json(value) if isinstance(value, Message) else value


class CallRecorder:
    """Keeps the records in memory (all, or the last ``keep``: a node that runs for days must not grow without
    bound); with ``path``, also appends every one to that JSON-lines file as it ends. The file is the
    caller's own, 0600, never reached through a link (``datafiles``); a write that fails (a full disk) is
    logged once and ends the file's recording, never the call recorded: the records stay in memory."""

    def __init__(self, path: str | Path | None = None, *, keep: int | None = None) -> None:
        self._records: deque[CallRecord] = deque(maxlen=keep)
        self.path = Path(path) if path else None
        self._failed = False
        """A write to ``path`` failed: the records since are kept in memory only."""
        if self.path is not None:
            try:
                os.close(open_private(self.path))
            except OSError as err:
                raise ConfigError(
                    f"cannot write the call record file: {refusal(err)}",
                    where=str(self.path),
                    fix="pass --record-calls a writable file of your own, not a link",
                ) from None

    def add(self, record: CallRecord) -> None:
        self._records.append(record)
        if self.path is not None and not self._failed:
            self._append(self.path, record)

    def _append(self, path: Path, record: CallRecord) -> None:
        line = (json.dumps(record.to_json(), sort_keys=True) + "\n").encode()
        try:
            fd = open_private(path)
            try:
                write_all(fd, line)
            finally:
                os.close(fd)
        except OSError as err:
            self._failed = True
            get_logger("calls").error(
                "Cannot write the call record file; the calls go on, recorded in memory only",
                refusal(err),
                path=str(path),
                method=record.method,
                requestID=record.request_id,
            )

    def records(self, *, driver: str | None = None, method: str | None = None) -> list[CallRecord]:
        """The kept records in completion order; ``method`` matches the full path or just the method name. Read from
        a copy: a tap on its own thread adds records while a replay reads them."""
        return [
            record
            for record in list(self._records)
            if (driver is None or record.driver == driver)
            and (method is None or record.method == method or record.method.rsplit("/", 1)[-1] == method)
        ]

    def export_jsonl(self, path: str | Path) -> None:
        """Write every kept record to ``path``, one JSON document per line."""
        lines = "".join(json.dumps(record.to_json(), sort_keys=True) + "\n" for record in self._records)
        fd = open_private(path, os.O_WRONLY | os.O_TRUNC)
        try:
            write_all(fd, lines.encode())
        finally:
            os.close(fd)
