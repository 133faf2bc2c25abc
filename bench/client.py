"""The load generator's HTTP client: GraphQL POSTs over keep-alive HTTP/1.1 connections.

The load generator shares the machine's cores with the gateway and the node, so every
CPU-second it spends is one the gateway under test does not get. A general-purpose client
(aiohttp's: cookie jar, tracing hooks, a header multidict per response) costs about a third
of a millisecond per request here; this one writes one pre-built request per call and reads
the response by its ``Content-Length``, as load tools such as wrk do. It speaks only what
the gateway answers a POST with: a body of known ``Content-Length``. Like a browser (and
aiohttp's client, which it replaces) it accepts brotli, gzip and deflate, so the gateway
compresses what it would compress for a real client.
"""

from __future__ import annotations

import asyncio
import zlib
from typing import Any, cast
from urllib.parse import urlsplit

import brotli
import orjson


class HttpError(Exception):
    """A response the load generator cannot use: a refused connection, a closed one, an
    unexpected framing or a non-JSON body."""


class _Connection(asyncio.Protocol):
    """One keep-alive connection; one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self._length = -1
        self._status = 0
        self._header_end = 0
        self._coding = b""
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, but have its methods.
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(HttpError(f"connection closed: {exc or 'by the server'}"))

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if self._length < 0:
            end = self._buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            self._parse_head(bytes(self._buffer[:end]))
            self._header_end = end + 4
        if len(self._buffer) - self._header_end >= self._length:
            body = bytes(self._buffer[self._header_end : self._header_end + self._length])
            del self._buffer[: self._header_end + self._length]
            status, coding, self._length = self._status, self._coding, -1
            if self._waiter is not None and not self._waiter.done():
                try:
                    self._waiter.set_result((status, _decoded(body, coding)))
                except (brotli.error, zlib.error) as error:
                    self._waiter.set_exception(HttpError(f"a {coding!r} body that does not decode: {error}"))

    def _parse_head(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        try:
            self._status = int(lines[0].split(b" ", 2)[1])
        except (IndexError, ValueError):
            self._fail(f"not an HTTP status line: {lines[0]!r}")
            return
        self._coding = b""
        length = -1
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"content-encoding":
                self._coding = value.strip().lower()
        if length < 0:
            self._fail(f"a response without Content-Length (status {self._status})")
        else:
            self._length = length

    def _fail(self, why: str) -> None:
        self._length = 1 << 62  # never complete: the connection is dropped
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_exception(HttpError(why))
        if self.transport is not None:
            self.transport.close()

    async def exchange(self, request: bytes) -> tuple[int, bytes]:
        assert self.transport is not None
        self._waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return await self._waiter


def _decoded(body: bytes, coding: bytes) -> bytes:
    if coding == b"br":
        return bytes(brotli.decompress(body))
    if coding == b"gzip":
        return zlib.decompress(body, 16 + zlib.MAX_WBITS)
    if coding == b"deflate":
        return zlib.decompress(body)
    if coding in (b"", b"identity"):
        return body
    raise zlib.error(f"unknown content coding {coding!r}")


class GraphQLClient:
    """POSTs GraphQL requests to ``url`` over as many keep-alive connections as calls in flight."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"an http:// URL is needed, got {url!r}")
        self._host = parts.hostname
        self._port = parts.port or 80
        self._head = (
            f"POST {parts.path or '/'} HTTP/1.1\r\nHost: {parts.netloc}\r\n"
            "Content-Type: application/json\r\nAccept: application/json\r\n"
            "Accept-Encoding: gzip, deflate, br\r\n"
        ).encode()
        self._idle: list[_Connection] = []
        self._open: set[_Connection] = set()

    async def post(
        self, query: str, variables: dict[str, Any] | None = None, token: str | None = None
    ) -> tuple[int, dict[str, Any]]:
        """The response's status and its JSON body."""
        body = orjson.dumps({"query": query, "variables": variables or {}})
        auth = f"Authorization: Bearer {token}\r\n".encode() if token else b""
        request = b"%s%sContent-Length: %d\r\n\r\n%s" % (self._head, auth, len(body), body)
        connection = await self._connection()
        try:
            status, raw = await connection.exchange(request)
        except BaseException:
            self._drop(connection)
            raise
        self._idle.append(connection)
        try:
            return status, orjson.loads(raw)
        except orjson.JSONDecodeError as error:
            raise HttpError(f"status {status}, not a JSON body: {raw[:200]!r}") from error

    async def _connection(self) -> _Connection:
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed:
                return connection
            self._open.discard(connection)
        loop = asyncio.get_running_loop()
        try:
            _, connection = await loop.create_connection(_Connection, self._host, self._port)
        except OSError as error:
            raise HttpError(f"cannot connect to {self._host}:{self._port}: {error}") from error
        self._open.add(connection)
        return connection

    def _drop(self, connection: _Connection) -> None:
        self._open.discard(connection)
        if connection.transport is not None:
            connection.transport.close()

    def close(self) -> None:
        for connection in list(self._open):
            self._drop(connection)
        self._idle.clear()
