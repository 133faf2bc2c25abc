"""The hostile-request corpus (``tests/support/hostile/corpus.py``) against the running gateway.

Each request gets its documented status and ``extensions.code``, none is
answered with a 5xx or an uncoded error, and ``/readyz`` still answers 200
after the whole corpus.
"""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from tests.support.client import Api
from tests.support.fuzz.watch import watching
from tests.support.fuzz.wire import address, exchange
from tests.support.hostile.corpus import CORPUS, GRJ, Hostile


async def send(api: Api, case: Hostile) -> tuple[int, Any]:
    headers = {"Accept": GRJ, **case.headers}
    if case.content_type is not None:
        headers["Content-Type"] = case.content_type
    url = api.url + (f"?{case.query_string}" if case.query_string else "")
    async with (
        aiohttp.ClientSession(skip_auto_headers=["Content-Type"]) as http,
        http.request(case.method, url, data=case.body, headers=headers) as response,
    ):
        text = await response.text(errors="replace")
        try:
            import json

            return response.status, json.loads(text)
        except ValueError:
            return response.status, text


@pytest.mark.parametrize("case", CORPUS, ids=[case.name for case in CORPUS])
async def test_a_hostile_request_gets_its_documented_answer(api: Api, case: Hostile) -> None:
    status, body = await send(api, case)
    assert isinstance(body, (dict, list)), (status, body)
    results = body if case.batch else [body]
    assert isinstance(body, list) == case.batch, body
    for result in results:
        assert isinstance(result, dict), result
        if status >= 400:
            assert "data" not in result, result
        codes = [error.get("extensions", {}).get("code") for error in result["errors"]]
        assert codes and all(code == case.code for code in codes), (status, result)
    assert status == case.status, (status, body)


async def test_readyz_answers_after_the_corpus(api: Api) -> None:
    for case in CORPUS:
        await send(api, case)
    async with aiohttp.ClientSession() as http, http.get(api.base_url + "/readyz") as response:
        assert response.status == 200
        assert (await response.json())["status"] == "ready"


#: Requests aiohttp cannot parse, and bodies whose framing or coding breaks while read,
#: as raw bytes (no client library sends them); each found by ``tests/integration/test_fuzz_http.py``.
MALFORMED_ON_THE_WIRE = {
    "a version that is not one": b"GET /graphql HTTP/1.1x\r\nHost: h\r\n\r\n",
    "two Host headers": b"GET /readyz HTTP/1.1\r\nHost: h\r\nHost: \r\n\r\n",
    "a control character in a header": b"GET /readyz HTTP/1.1\r\nHost: h\r\nAccept: a\x01b\r\n\r\n",
    "a folded header": b"POST /graphql HTTP/1.1\r\nHost: h\r\nContent-Length:\r\n  2\r\n\r\n{}",
    "two lengths": b"POST /graphql HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\nContent-Length: 2\r\n\r\n{}",
    "a space before the colon": b"POST /graphql HTTP/1.1\r\nHost: h\r\nContent-Length : 2\r\n\r\n{}",
    "a WebSocket key that is not ASCII": (
        b"GET /graphql HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Key: dGhlIH\xffNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        b"Sec-WebSocket-Protocol: graphql-transport-ws\r\n\r\n"
    ),
}
BROKEN_BODIES = {
    "a compressed body that does not decode": (
        b"POST /graphql HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
        b'Content-Encoding: br\r\nContent-Length: 16\r\n\r\n{"query": "{a}"}',
        415,
    ),
    "a chunk size that is not a number": (
        b"POST /graphql HTTP/1.1\r\nHost: h\r\nContent-Type: application/json\r\n"
        b'Transfer-Encoding: chunked\r\n\r\n5\r\n{"que\r\nzz\r\nry"}\r\n0\r\n\r\n',
        400,
    ),
}


@pytest.mark.parametrize("request_bytes", MALFORMED_ON_THE_WIRE.values(), ids=list(MALFORMED_ON_THE_WIRE))
async def test_a_request_that_does_not_parse_is_answered_400_without_a_traceback(
    api: Api, request_bytes: bytes
) -> None:
    host, port = address(api.base_url)
    with watching() as log:
        answer = await exchange(host, port, request_bytes)
        await asyncio.sleep(0.05)  # a log line written after the answer is still seen
    assert answer.status == 400, answer
    assert log.take() == []


@pytest.mark.parametrize("case", BROKEN_BODIES.values(), ids=list(BROKEN_BODIES))
async def test_a_body_that_breaks_while_read_is_a_request_error_without_a_traceback(
    api: Api, case: tuple[bytes, int]
) -> None:
    request_bytes, status = case
    host, port = address(api.base_url)
    with watching() as log:
        answer = await exchange(host, port, request_bytes)
        await asyncio.sleep(0.05)
    assert answer.status == status, answer
    assert b"INTERNAL_SERVER_ERROR" not in answer.body
    assert log.take() == []
