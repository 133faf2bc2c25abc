"""A JSON body read whole, only while it keeps coming, and never past its limit
(``gateway/http/requests.py``: ``read_body``), on aiohttp's own stream reader."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import pytest
from aiohttp import StreamReader
from aiohttp.base_protocol import BaseProtocol

from gateway.http import requests
from gateway.http.requests import RequestRefused, read_body

BODY = b'{"query": "{ __typename }"}'


def _reader() -> StreamReader:
    """A request body's stream on an open connection (a reader waits only on one)."""
    loop = asyncio.get_running_loop()
    protocol = BaseProtocol(loop)
    protocol.connection_made(asyncio.Transport())
    return StreamReader(protocol, 2**16, loop=loop)


@pytest.fixture
def timed_waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The deadlines ``read_body`` arms, one per wait for more of the body."""
    armed: list[float] = []
    within = requests.within

    async def counted(seconds: float, read: Awaitable[Any]) -> Any:
        armed.append(seconds)
        return await within(seconds, read)

    monkeypatch.setattr(requests, "within", counted)
    return armed


async def test_a_body_that_came_whole_is_read_without_a_deadline(timed_waits: list[float]) -> None:
    content = _reader()
    content.feed_data(BODY)
    content.feed_eof()
    assert await read_body(content, 1024, 5.0) == BODY
    assert timed_waits == []


async def test_a_body_that_comes_in_pieces_waits_for_each_under_the_deadline(
    timed_waits: list[float],
) -> None:
    content = _reader()
    content.feed_data(BODY[:10])
    loop = asyncio.get_running_loop()
    loop.call_later(0.01, content.feed_data, BODY[10:])
    loop.call_later(0.02, content.feed_eof)
    assert await read_body(content, 1024, 5.0) == BODY
    assert timed_waits and set(timed_waits) == {5.0}


async def test_a_body_that_stops_coming_is_refused_with_408() -> None:
    content = _reader()
    content.feed_data(BODY[:10])
    with pytest.raises(RequestRefused) as refused:
        await read_body(content, 1024, 0.05)
    assert refused.value.status_code == 408


@pytest.mark.parametrize("whole", [True, False])
async def test_a_body_past_its_limit_is_refused_with_413(whole: bool) -> None:
    content = _reader()
    content.feed_data(BODY[:20])
    if whole:
        content.feed_data(BODY[20:])
        content.feed_eof()
    else:
        asyncio.get_running_loop().call_later(0.01, content.feed_data, BODY[20:])
    with pytest.raises(RequestRefused) as refused:
        await read_body(content, len(BODY) - 1, 5.0)
    assert refused.value.status_code == 413


def _nested(depth: int, opening: str = "[", closing: str = "]") -> str:
    """A request whose variable nests the whole body ``depth`` levels deep."""
    inner = opening * (depth - 2) + closing * (depth - 2)
    return '{"query": "{ __typename }", "variables": {"v": ' + (inner or "1") + "}}"


@pytest.mark.parametrize("kind", [str, bytes])
def test_a_body_nested_to_the_limit_parses_and_one_level_more_is_refused(kind: type) -> None:
    limit = requests.MAX_JSON_DEPTH
    within = _nested(limit)
    assert requests._openings(within) == limit + 1  # the query's brace too: the value is walked
    parsed = requests.parse_request_json(within if kind is str else within.encode())
    assert isinstance(parsed, dict) and parsed["variables"]
    deeper = _nested(limit + 1)
    with pytest.raises(Exception, match=f"nests deeper than {limit} levels"):
        requests.parse_request_json(deeper if kind is str else deeper.encode())


def test_brackets_inside_strings_are_counted_but_never_refuse_a_shallow_body() -> None:
    text = '{"query": "{ __typename }", "variables": {"v": "' + "[{" * 100 + '"}}'
    assert requests._openings(text) > requests.MAX_JSON_DEPTH
    for body in (text, text.encode()):
        parsed = requests.parse_request_json(body)
        assert isinstance(parsed, dict) and parsed["variables"] == {"v": "[{" * 100}
