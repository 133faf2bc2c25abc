"""A WebSocket message is held to the limits of an HTTP body: the same JSON depth and
size, so no message can exhaust the parser or the process."""

from __future__ import annotations

import asyncio
import json

from tests.client import Api
from tests.ws_protocol import LEGACY_WS, TRANSPORT_WS, WAIT, Socket

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
