"""A WebSocket message is held to the limits of an HTTP body: the same JSON depth and
size, so no message can exhaust the parser or the process."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from tests.support.client import Api
from tests.support.fuzz.watch import watching
from tests.support.ws_protocol import LEGACY_WS, TRANSPORT_WS, WAIT, Socket

DEEP = (
    '{"id": "1", "type": "subscribe", "payload": {"query": "{ __typename }", "variables": {"v": '
    + ("[" * 100_000 + "]" * 100_000)
    + "}}}"
)


async def test_a_message_nested_deeper_than_a_body_may_be_closes_the_socket(api: Api) -> None:
    async with Socket.open(api, TRANSPORT_WS) as socket:
        assert (await socket.init())["type"] == "connection_ack"  # type: ignore[index]
        await socket.ws.send_str(DEEP)
        assert await asyncio.wait_for(socket.close_code(), WAIT) == 4400


async def test_legacy_graphql_ws_ignores_a_message_it_cannot_read_and_goes_on(api: Api) -> None:
    async with Socket.open(api, LEGACY_WS) as socket:
        assert (await socket.init())["type"] == "connection_ack"  # type: ignore[index]
        await socket.ws.send_str(DEEP)
        await socket.start("subscription { messageReceived { id } }")
        answer = await socket.receive()  # answered (anonymous: refused), so the socket read on
        assert answer is not None and answer["type"] == "data", answer
        assert answer["payload"]["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_a_message_over_the_body_limit_closes_the_socket_1009(api: Api) -> None:
    async with Socket.open(api, TRANSPORT_WS) as socket:
        assert (await socket.init())["type"] == "connection_ack"  # type: ignore[index]
        message = {"id": "1", "type": "subscribe", "payload": {"query": "{ __typename }", "variables": {}}}
        message["payload"]["variables"] = {"pad": "p" * (1024 * 1024)}  # type: ignore[index]
        await socket.ws.send_str(json.dumps(message))
        assert await asyncio.wait_for(socket.close_code(), WAIT) == 1009


async def test_a_document_that_does_not_parse_is_answered_as_its_protocol_says_and_logs_nothing(
    api: Api,
) -> None:
    """Found by ``tests/integration/test_fuzz_websocket.py``: the parser cache parses in a hook, outside
    the guard Strawberry keeps over its own parse, so over a socket the syntax error escaped
    the operation's task, logged with its traceback, and the client heard nothing."""
    with watching() as log:
        async with Socket.open(api, TRANSPORT_WS) as socket:
            assert (await socket.init())["type"] == "connection_ack"  # type: ignore[index]
            await socket.start("subscrip { messageReceived { id } }")
            assert await asyncio.wait_for(socket.close_code(), WAIT) == 4400
        async with Socket.open(api, LEGACY_WS) as socket:
            assert (await socket.init())["type"] == "connection_ack"  # type: ignore[index]
            operation_id = await socket.start("query { me { user { login } } rooms(first: 2) { n}ame } }")
            answer = await socket.receive()
            assert answer is not None and answer["id"] == operation_id, answer
            assert answer["type"] == "error" and "Syntax Error" in answer["payload"]["message"], answer
            # The socket reads on (anonymous here: the subscription is refused, as it should be).
            await socket.start("subscription { messageReceived { id } }")
            answer = await socket.receive()
            assert answer is not None and answer["type"] == "data", answer
            assert answer["payload"]["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
        await asyncio.sleep(0.05)
    assert log.take() == []


#: Messages that are JSON objects but of no shape either protocol allows (found by
#: ``tests/integration/test_fuzz_websocket.py``: Strawberry's legacy handler indexed them blindly, and
#: the socket's whole handler failed with a traceback in the log).
MISSHAPEN: list[dict[str, Any]] = [
    {"payload": 0},
    {"type": 7},
    {"id": ["1"], "type": "start", "payload": {"query": "subscription { messageReceived { id } }"}},
    {"id": "1", "type": "start", "payload": []},
    {"id": "1", "type": "start", "payload": {"variables": {}}},
    {
        "id": "1",
        "type": "start",
        "payload": {"query": "subscription { messageReceived { id } }", "variables": 3},
    },
    {"type": "connection_init", "payload": "token"},
    {"type": "stop"},
    {"type": "start", "payload": {"query": "subscription { messageReceived { id } }"}},
    {"type": "\ud800"},
    {"id": "\ud800", "type": "start", "payload": {"query": "subscription { messageReceived { id } }"}},
]


async def test_a_message_of_no_protocols_shape_is_refused_and_logs_nothing(api: Api) -> None:
    with watching() as log:
        for message in MISSHAPEN:
            async with Socket.open(api, LEGACY_WS) as socket:
                assert (await socket.init())["type"] == "connection_ack"  # type: ignore[index]
                await socket.send(message)
                # Legacy graphql-ws ignores what it cannot read and goes on.
                await socket.start("subscription { messageReceived { id } }")
                answer = await socket.receive()
                assert answer is not None and answer["type"] == "data", (message, answer)
            async with Socket.open(api, TRANSPORT_WS) as socket:
                assert (await socket.init())["type"] == "connection_ack"  # type: ignore[index]
                await socket.send({**message, "type": "subscribe"} if "type" in message else message)
                assert await asyncio.wait_for(socket.close_code(), WAIT) == 4400, message
        await asyncio.sleep(0.05)
    assert log.take() == []
