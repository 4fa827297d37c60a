"""One HTTP/1.1 exchange on a kept-alive stream: a request written, its answer read whole or piece by piece.

Only what an API server's answers can be: a status line, headers, and a body sized by ``Content-Length``,
sent in chunks (a watch's events, each as the server flushes it), or running to the end of the connection.
Interim 1xx answers are skipped. Whether the connection may carry the next request is part of the answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import attrs

HEADER_LIMIT = 1 << 20
"""The most a status line and headers may take (the stream's limit for one line search)."""
READ_SIZE = 1 << 16


class ProtocolError(ValueError):
    """The server's bytes are not an HTTP/1.1 answer."""


@attrs.frozen
class Head:
    """An answer's status line and headers (names in lower case)."""

    status: int
    reason: str
    headers: dict[str, str]

    @property
    def chunked(self) -> bool:
        return "chunked" in self.headers.get("transfer-encoding", "").lower()

    @property
    def reusable(self) -> bool:
        """The connection may carry another request once the body is read (a body whose end the server
        marks, and no ``Connection: close``)."""
        sized = self.chunked or "content-length" in self.headers
        return sized and "close" not in self.headers.get("connection", "").lower()


@attrs.frozen
class Answer:
    status: int
    reason: str
    body: bytes
    reusable: bool
    """The connection may carry another request."""


def request(method: str, target: str, host: str, headers: dict[str, str], body: bytes | None = None) -> bytes:
    """The bytes of ``method target`` to ``host`` with ``headers`` and ``body`` (sized)."""
    lines = [f"{method} {target} HTTP/1.1", f"Host: {host}", *(f"{name}: {value}" for name, value in headers.items())]
    if body is not None or method != "GET":
        lines.append(f"Content-Length: {len(body or b'')}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


async def exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, data: bytes) -> Answer:
    """Send ``data`` and read the whole answer; ``asyncio.IncompleteReadError`` when the server closed first."""
    writer.write(data)
    answer = await head(reader)
    content = b"".join([piece async for piece in body(reader, answer)])
    return Answer(answer.status, answer.reason, content, answer.reusable)


async def head(reader: asyncio.StreamReader) -> Head:
    """The status line and headers of the answer (past any interim 1xx ones)."""
    while True:
        answer = await _head(reader)
        if not 100 <= answer.status <= 199:
            return answer


async def body(reader: asyncio.StreamReader, answer: Head) -> AsyncIterator[bytes]:
    """The pieces of the body of ``answer`` as they come: each chunk, a sized body whole, else each read up to
    the end of the connection."""
    if answer.chunked:
        while size := _number((await reader.readuntil(b"\r\n"))[:-2].split(b";")[0].decode("latin-1"), 16):
            yield await reader.readexactly(size)
            await reader.readexactly(2)
        while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers, up to the empty line
            pass
    elif "content-length" in answer.headers:
        yield await reader.readexactly(_number(answer.headers["content-length"], 10))
    else:  # HTTP/1.1 without a length: the body ends with the connection
        while piece := await reader.read(READ_SIZE):
            yield piece


async def _head(reader: asyncio.StreamReader) -> Head:
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
    return Head(int(code), reason, headers)


def _number(text: str, base: int) -> int:
    try:
        value = int(text.strip(), base)
    except ValueError:
        raise ProtocolError(f"not a body length: {text[:40]!r}") from None
    if value < 0:
        raise ProtocolError(f"negative body length {value}")
    return value
