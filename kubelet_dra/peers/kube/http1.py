"""One HTTP/1.1 exchange on a kept-alive stream: a GET written, its answer read whole.

Only what an API server's answer to a GET can be: a status line, headers, and a body sized by
``Content-Length``, sent in chunks, or running to the end of the connection. Interim 1xx answers
are skipped. Whether the connection may carry the next request is part of the answer.
"""

from __future__ import annotations

import asyncio

import attrs

HEADER_LIMIT = 1 << 20
"""The most a status line and headers may take (the stream's limit for one line search)."""


class ProtocolError(ValueError):
    """The server's bytes are not an HTTP/1.1 answer."""


@attrs.frozen
class Answer:
    status: int
    reason: str
    body: bytes
    reusable: bool
    """The connection may carry another request (a sized body, and no ``Connection: close``)."""


def request(target: str, host: str, headers: dict[str, str]) -> bytes:
    """The bytes of ``GET target`` to ``host`` with ``headers``."""
    lines = [f"GET {target} HTTP/1.1", f"Host: {host}", *(f"{name}: {value}" for name, value in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, data: bytes) -> Answer:
    """Send ``data`` and read the answer; ``asyncio.IncompleteReadError`` when the server closed first."""
    writer.write(data)
    while True:
        status, reason, headers = await _head(reader)
        if not 100 <= status <= 199:
            break
    reusable = "close" not in headers.get("connection", "").lower()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = await _chunked(reader)
    elif "content-length" in headers:
        body = await reader.readexactly(_number(headers["content-length"], 10))
    else:  # HTTP/1.1 without a length: the body ends with the connection
        body, reusable = await reader.read(), False
    return Answer(status, reason, body, reusable)


async def _head(reader: asyncio.StreamReader) -> tuple[int, str, dict[str, str]]:
    raw = await reader.readuntil(b"\r\n\r\n")
    status_line, *lines = raw[:-4].decode("latin-1").split("\r\n")
    version, _, rest = status_line.partition(" ")
    code, _, reason = rest.partition(" ")
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise ProtocolError(f"not an HTTP/1.1 status line: {status_line[:80]!r}")
    headers: dict[str, str] = {}
    for line in lines:
        name, colon, value = line.partition(":")
        if not colon:
            raise ProtocolError(f"malformed header line: {line[:80]!r}")
        key = name.strip().lower()
        headers[key] = f"{headers[key]}, {value.strip()}" if key in headers else value.strip()
    return int(code), reason, headers


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while size := _number((await reader.readuntil(b"\r\n"))[:-2].split(b";")[0].decode("latin-1"), 16):
        parts.append(await reader.readexactly(size))
        await reader.readexactly(2)
    while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers, up to the empty line
        pass
    return b"".join(parts)


def _number(text: str, base: int) -> int:
    try:
        value = int(text.strip(), base)
    except ValueError:
        raise ProtocolError(f"not a body length: {text[:40]!r}") from None
    if value < 0:
        raise ProtocolError(f"negative body length {value}")
    return value
