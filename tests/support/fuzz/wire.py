"""Raw HTTP on a socket: send bytes, read back one answer as it comes on the wire."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import zlib
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import brotli

from tests.support.fuzz.budget import HANG_GUARD


@dataclass
class Answer:
    """The first response to what was sent (``status`` None when the server closed without
    one), and whether the connection was still open after ``HANG_GUARD`` without it."""

    status: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    hung: bool = False


def address(base_url: str) -> tuple[str, int]:
    parts = urlsplit(base_url)
    assert parts.hostname is not None and parts.port is not None
    return parts.hostname, parts.port


def _decoded(headers: dict[str, str], body: bytes) -> bytes:
    coding = headers.get("content-encoding", "").strip().lower()
    with contextlib.suppress(Exception):
        if coding == "gzip":
            return gzip.decompress(body)
        if coding == "br":
            return bytes(brotli.decompress(body))
        if coding == "deflate":
            return zlib.decompress(body)
    return body


def _dechunked(data: bytes) -> tuple[bytes, bool]:
    """The body of a chunked message and whether it is complete."""
    body = bytearray()
    while True:
        line, separator, rest = data.partition(b"\r\n")
        if not separator:
            return bytes(body), False
        try:
            size = int(line.split(b";")[0], 16)
        except ValueError:
            return bytes(body), True  # not chunked after all: take what came
        if size == 0:
            return bytes(body), True
        if len(rest) < size + 2:
            return bytes(body), False
        body += rest[:size]
        data = rest[size + 2 :]


def _parse(data: bytes, bodiless: bool = False) -> tuple[Answer, bool] | None:
    """The answer in ``data`` and whether it is complete (``bodiless``: the answer to a HEAD
    request, whose head is all of it); None before its head ended."""
    head, separator, rest = data.partition(b"\r\n\r\n")
    if not separator:
        return None
    lines = head.split(b"\r\n")
    try:
        status = int(lines[0].split(b" ", 2)[1])
    except (IndexError, ValueError):
        return Answer(status=None, body=data), True
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if bodiless or status == 101 or status == 304 or status == 204 or 100 <= status < 200:
        return Answer(status, headers), True
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body, complete = _dechunked(rest)
        return Answer(status, headers, _decoded(headers, body)), complete
    if "content-length" in headers:
        length = int(headers["content-length"])
        return Answer(status, headers, _decoded(headers, rest[:length])), len(rest) >= length
    return Answer(status, headers, _decoded(headers, rest)), False


async def exchange(host: str, port: int, request: bytes) -> Answer:
    """Send ``request`` on a fresh connection; the first answer, read until it is complete
    or the server closes (``hung`` after :data:`HANG_GUARD` seconds of neither)."""
    reader, writer = await asyncio.open_connection(host, port)
    received = bytearray()
    bodiless = request.startswith(b"HEAD ")
    try:
        with contextlib.suppress(ConnectionError):
            writer.write(request)
            await writer.drain()
        try:
            async with asyncio.timeout(HANG_GUARD):
                while True:
                    try:
                        chunk = await reader.read(65536)
                    except ConnectionError:
                        chunk = b""
                    if chunk:
                        received += chunk
                    parsed = _parse(bytes(received), bodiless)
                    if parsed is not None and parsed[1]:
                        return parsed[0]
                    if not chunk:
                        return parsed[0] if parsed is not None else Answer(body=bytes(received))
        except TimeoutError:
            parsed = _parse(bytes(received), bodiless)
            answer = parsed[0] if parsed is not None else Answer(body=bytes(received))
            answer.hung = True
            return answer
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
