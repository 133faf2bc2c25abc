"""Slow clients over raw sockets: a request's head has a deadline, a body must keep coming.

A client that sends half a head (or nothing, or a head a byte at a time), or stops in the
middle of a body, would otherwise hold its connection for as long as the keep-alive allows
(an hour in aiohttp), and enough of them exhaust the process (slowloris). The gateway here is
started with short deadlines; every test asserts that the server closed the connection,
never how long it took: ``GUARD`` only tells a connection closed from one left open for good.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import pytest

from tests.conftest import ServerFactory
from tests.support.client import Api
from tests.support.ws_protocol import TRANSPORT_WS, Socket

#: Seconds after which a connection still open counts as never closed: a hang detector.
GUARD = 30.0
HEAD_SECONDS = 1.0
BODY_SECONDS = 2.0
HALF_A_HEAD = b"POST /graphql HTTP/1.1\r\nHost: gateway\r\nContent-Le"

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@pytest.fixture
async def strict(make_server: ServerFactory) -> Api:
    api, _ = await make_server(header_timeout_seconds=HEAD_SECONDS, body_timeout_seconds=BODY_SECONDS)
    return api


async def connect(api: Api) -> Connection:
    address = urlsplit(api.base_url)
    assert address.hostname is not None and address.port is not None
    return await asyncio.open_connection(address.hostname, address.port)


async def until_closed(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sends until it closes the connection (a reset counts as closed)."""
    received = bytearray()
    with contextlib.suppress(ConnectionError):
        while chunk := await asyncio.wait_for(reader.read(65536), GUARD):
            received += chunk
    return bytes(received)


async def response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """One whole response of a kept-alive connection: its status and body."""
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), GUARD)
    status = int(head.split(b" ", 2)[1])
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return status, await asyncio.wait_for(reader.readexactly(length), GUARD)


def request(method: str, path: str, body: bytes = b"", **headers: str) -> bytes:
    lines = [
        f"{method} {path} HTTP/1.1",
        "Host: gateway",
        *(f"{k.replace('_', '-')}: {v}" for k, v in headers.items()),
    ]
    if body or method == "POST":
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


@contextlib.asynccontextmanager
async def trickling(writer: asyncio.StreamWriter, piece: bytes, every: float) -> AsyncIterator[None]:
    """Send ``piece`` every ``every`` seconds, until the server closes or the block ends."""

    async def trickle() -> None:
        with contextlib.suppress(ConnectionError):
            while True:
                writer.write(piece)
                await writer.drain()
                await asyncio.sleep(every)

    task = asyncio.create_task(trickle())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_many_connections_that_never_finish_a_head_are_all_closed(strict: Api) -> None:
    silent = [await connect(strict) for _ in range(20)]
    halves = [await connect(strict) for _ in range(20)]
    for _, writer in halves:
        writer.write(HALF_A_HEAD)
    trickler = await connect(strict)
    trickler[1].write(b"GET /healthz HTTP/1.1\r\nHost: gateway\r\nX-Padding: ")
    async with trickling(trickler[1], b"a", 0.1):  # bytes keep coming, the head never ends
        answers = await asyncio.gather(*(until_closed(r) for r, _ in [*silent, *halves, trickler]))
    assert answers[:20] == [b""] * 20, "a connection that sent nothing is closed without a word"
    for answer in answers[20:]:
        assert answer.startswith(b"HTTP/1.1 408 "), answer
    # The server is still there for everyone else.
    reader, writer = await connect(strict)
    writer.write(request("GET", "/healthz"))
    assert (await response(reader))[0] == 200
    writer.close()


async def test_an_idle_kept_alive_connection_is_no_slow_head_but_its_next_head_has_a_deadline(
    strict: Api,
) -> None:
    reader, writer = await connect(strict)
    writer.write(request("GET", "/healthz"))
    assert (await response(reader))[0] == 200
    await asyncio.sleep(HEAD_SECONDS * 2.5)  # idle between requests: the keep-alive's time, not a head's
    writer.write(request("GET", "/healthz"))
    assert (await response(reader))[0] == 200
    writer.write(HALF_A_HEAD)
    assert (await until_closed(reader)).startswith(b"HTTP/1.1 408 ")


async def test_a_stalled_json_body_is_answered_408_and_closed(strict: Api) -> None:
    reader, writer = await connect(strict)
    body = json.dumps({"query": "{ __typename }"}).encode()
    head = request("POST", "/graphql", Content_Type="application/json")
    head = head.replace(b"Content-Length: 0", f"Content-Length: {len(body) + 100}".encode())
    writer.write(head + body)  # a hundred bytes short, for ever
    answer = await until_closed(reader)
    assert answer.startswith(b"HTTP/1.1 408 "), answer
    error = json.loads(answer.split(b"\r\n\r\n", 1)[1])["errors"][0]
    assert error["extensions"]["code"] == "BAD_REQUEST" and "stalled" in error["message"]


async def test_a_stalled_multipart_body_is_answered_408_and_closed(strict: Api) -> None:
    reader, writer = await connect(strict)
    boundary = "b0undary"
    started = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="operations"\r\n\r\n'
        '{"query": "mutation($f: Upload!) { sendEmail'
    ).encode()
    head = (
        "POST /graphql HTTP/1.1\r\nHost: gateway\r\nGraphQL-Preflight: 1\r\n"
        f"Content-Type: multipart/form-data; boundary={boundary}\r\nContent-Length: 100000\r\n\r\n"
    ).encode()
    writer.write(head + started)
    answer = await until_closed(reader)
    assert answer.startswith(b"HTTP/1.1 408 "), answer


async def test_a_body_that_keeps_coming_is_read_to_its_end(strict: Api) -> None:
    """Eight pieces, each well within the body deadline, together well past it."""
    reader, writer = await connect(strict)
    body = json.dumps({"query": "{ __typename }", "variables": {"pad": "x" * 64}}).encode()
    writer.write(request("POST", "/graphql", body, Content_Type="application/json")[: -len(body)])
    pieces = [body[i : i + 1 + len(body) // 8] for i in range(0, len(body), 1 + len(body) // 8)]
    for piece in pieces:
        await asyncio.sleep(BODY_SECONDS / 5)
        writer.write(piece)
    status, answer = await response(reader)
    assert (status, json.loads(answer)["data"]) == (200, {"__typename": "Query"})
    writer.close()


async def test_an_idle_websocket_is_not_a_slow_head(strict: Api) -> None:
    async with Socket.open(strict, TRANSPORT_WS) as socket:
        assert (await socket.init()) == {"type": "connection_ack"}
        await asyncio.sleep(HEAD_SECONDS * 2.5)
        result = await socket.result("{ __typename }")
        assert result is not None and result["data"] == {"__typename": "Query"}
