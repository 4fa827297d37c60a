"""The control channel: a Unix socket in the plugin dir through which tests and scenarios steer a running driver.

Protocol: one JSON object per connection, one JSON answer back, each on one line.

| request | answer |
|---|---|
| ``{"op": "get"}`` | ``{"ok": true, "knobs": {name: value}}`` (the knobs that are set) |
| ``{"op": "set", "knobs": {name: "value"}}`` | the same, after setting |
| ``{"op": "clear", "knobs": [name, ...]}`` | the same, after clearing the named knobs (all when empty) |
| ``{"op": "health", "devices": {device: "Unhealthy"}, "message": "..."}`` | ``{"ok": true, "health": {...}}`` |
| ``{"op": "status"}`` | ``{"ok": true, "status": {...}}``: registration, prepared claims, blocked calls, knobs |

Failures answer ``{"ok": false, "error": "..."}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kubelet_dra.peers.driver.files import remove
from kubelet_dra.peers.errors import ConfigError, KubeletDRAError, UsageError
from kubelet_dra.peers.log import Logger

Operation = Callable[[dict[str, Any]], dict[str, Any]]
TIMEOUT = 10.0
LINE_LIMIT = 1 << 20
READS = ("get", "status")


class ControlServer:
    """Answers control requests with the operations the driver hands it."""

    def __init__(self, path: Path, operations: dict[str, Operation], log: Logger) -> None:
        self._path = path
        self._operations = operations
        self._log = log
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        remove(self._path)
        self._server = await asyncio.start_unix_server(self._serve, path=str(self._path), limit=LINE_LIMIT)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        remove(self._path)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), TIMEOUT)
            answer = self._answer(line)
            writer.write(json.dumps(answer).encode() + b"\n")
            await writer.drain()
        except (OSError, TimeoutError, ValueError) as err:
            self._log.warning("control connection failed", err=str(err))
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    def _answer(self, line: bytes) -> dict[str, Any]:
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise UsageError("a control request is a JSON object")
            operation = self._operations.get(request.get("op", ""))
            if operation is None:
                raise UsageError(f"unknown control op {request.get('op')!r}", fix=f"use {', '.join(self._operations)}")
            answer = operation(request)
        except json.JSONDecodeError as err:
            return {"ok": False, "error": f"not JSON: {err}"}
        except KubeletDRAError as err:
            return {"ok": False, "error": str(err)}
        # reads are polled (a scenario's expectations ask every 50 ms): only changes are worth a line by default
        (self._log.v(4) if request["op"] in READS else self._log).info("control request", op=request["op"])
        return {"ok": True, **answer}


async def request(path: Path, message: dict[str, Any]) -> dict[str, Any]:
    """Send one control request to the driver listening at ``path``; ``UsageError`` when it refuses."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(str(path), limit=LINE_LIMIT), TIMEOUT)
    except (OSError, TimeoutError) as err:
        raise ConfigError(
            f"no driver answers on its control socket: {getattr(err, 'strerror', None) or err}",
            where=str(path),
            fix="start `kubelet-dra driver` first, and pass the same --plugin-dir (or --driver-name)",
        ) from err
    try:
        writer.write(json.dumps(message).encode() + b"\n")
        await writer.drain()
        answer = json.loads(await asyncio.wait_for(reader.readline(), TIMEOUT))
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    if not answer.get("ok"):
        raise UsageError(str(answer.get("error")), where=str(path))
    return answer
