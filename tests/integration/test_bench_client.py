"""The benchmarks' load generator (``bench/client.py``): what it reads is what a GraphQL client reads."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest

from bench import client as bench_client
from bench.client import GraphQLClient, HttpError
from tests.support.client import Api

INTROSPECTION = "{ __schema { types { name fields { name } } } }"


async def test_results_match_a_graphql_client_compressed_or_not(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    codings: list[bytes] = []
    decoded = bench_client._decoded

    def spy(body: bytes, coding: bytes) -> bytes:
        codings.append(coding)
        return decoded(body, coding)

    monkeypatch.setattr(bench_client, "_decoded", spy)
    lean = GraphQLClient(api.url)
    try:
        for query in (INTROSPECTION, "{ __typename }"):
            status, body = await lean.post(query)
            reference = await api.call(query)
            assert status == 200
            assert body["data"] == reference.data
        invalid = "query($n: Int!) { nope(n: $n) }"
        _, body = await lean.post(invalid, {"n": 1})
        reference = await api.call(invalid, {"n": 1})
        assert [e["message"] for e in body["errors"]] == [e["message"] for e in reference.errors]
    finally:
        lean.close()
    # The large result came brotli-compressed (the gateway compresses for it as for a browser),
    # the small one as it is.
    assert codings[0] == b"br"
    assert codings[1] == b""


async def test_calls_in_sequence_share_a_connection_and_calls_at_once_do_not(api: Api) -> None:
    lean = GraphQLClient(api.url)
    try:
        for _ in range(5):
            _, body = await lean.post("{ __typename }")
            assert body["data"] == {"__typename": "Query"}
        assert len(lean._open) == 1
        bodies = await asyncio.gather(*(lean.post(INTROSPECTION) for _ in range(6)))
        assert all(body["data"]["__schema"]["types"] for _, body in bodies)
        assert len(lean._open) == 6
    finally:
        lean.close()


@asynccontextmanager
async def _answering(reply: Callable[[asyncio.StreamWriter], None]) -> AsyncIterator[str]:
    """A loopback HTTP server that reads one request head and answers with ``reply``."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        reply(writer)
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/graphql"
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (b"", "connection closed"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", "Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nContent-Encoding: br\r\n\r\nnot brotli", "not decode"),
        (b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 5\r\n\r\noops!", "not a JSON body"),
        (b"garbage\r\n\r\n", "not an HTTP status line"),
    ],
)
async def test_an_unusable_response_is_a_clear_error(reply: bytes, message: str) -> None:
    async with _answering(lambda writer: writer.write(reply)) as url:
        lean = GraphQLClient(url)
        try:
            with pytest.raises(HttpError, match=message):
                await lean.post("{ __typename }")
        finally:
            lean.close()
