"""What one client may hold over WebSockets: sockets per client address (4429), sockets that
do nothing (closed with 4410 once idle), operations per socket and per user
(``QUERY_TOO_COMPLEX``), subscriptions costed like queries; and a client that leaves while
the gateway sends leaves nothing in the log."""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest

from gateway.rooms.events import room_channel
from gateway.server.app import SERVICES, SOCKETS
from tests.conftest import ServerFactory
from tests.support.client import Api
from tests.support.fuzz.watch import watching
from tests.support.rooms import create_room, post
from tests.support.ws_protocol import PROTOCOLS, TRANSPORT_WS, WAIT, Socket

SUBSCRIBE = "subscription($r: String!) { roomMessages(room: $r) { content } }"
MY_ROOMS = "query { me { user { login rooms(first: 50) { edges { node { name } } } } } }"
PARTICIPANTS = "participants(first: $n) { edges { node { login bio } } }"


async def _until(predicate: Any) -> None:
    for _ in range(int(WAIT * 20)):
        if predicate():
            return
        await asyncio.sleep(0.05)
    raise AssertionError("the condition never held")


def _acked(message: dict[str, Any] | None) -> bool:
    return message is not None and message["type"] == "connection_ack"


def _followers(app: Any, name: str) -> int:
    hub = app[SERVICES].live
    assert hub is not None
    return int(hub.followers(room_channel(name)))


def _refusal(message: dict[str, Any] | None, operation_id: str) -> dict[str, Any]:
    """The error of an ``error`` message for ``operation_id`` (either protocol's shape)."""
    assert message is not None and message["type"] == "error" and message["id"] == operation_id, message
    payload = message["payload"]
    error: dict[str, Any] = payload[0] if isinstance(payload, list) else payload
    return error


def _stop(socket: Socket, operation_id: str) -> dict[str, Any]:
    kind = "complete" if socket.protocol == TRANSPORT_WS else "stop"
    return {"id": operation_id, "type": kind}


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_sockets_are_capped_per_client_address(make_server: ServerFactory, protocol: str) -> None:
    """Two sockets from 127.0.0.1, then 4429 right after the handshake; an
    ``X-Forwarded-For`` from a peer that is no trusted proxy changes nothing."""
    capped, app = await make_server(max_sockets_per_address=2)
    counts = app[SOCKETS]
    async with Socket.open(capped, protocol) as first, Socket.open(capped, protocol) as second:
        assert _acked(await first.init())
        assert _acked(await second.init())
        spoofed = {"X-Forwarded-For": "203.0.113.7"}
        async with Socket.open(capped, protocol, headers=spoofed) as third:
            assert await third.close_code() == 4429
        assert counts.from_address("127.0.0.1") == 2
        await first.ws.close()
        await _until(lambda: counts.from_address("127.0.0.1") == 1)
        async with Socket.open(capped, protocol) as replacement:
            assert _acked(await replacement.init())
    await _until(lambda: counts.total == 0)


async def test_behind_a_trusted_proxy_each_forwarded_client_has_its_own_cap(
    make_server: ServerFactory,
) -> None:
    capped, _ = await make_server(max_sockets_per_address=1, trusted_proxies=("127.0.0.1/32",))
    one = {"X-Forwarded-For": "198.51.100.1"}
    other = {"X-Forwarded-For": "198.51.100.2"}
    async with Socket.open(capped, TRANSPORT_WS, headers=one) as first:
        assert _acked(await first.init())
        async with Socket.open(capped, TRANSPORT_WS, headers=one) as again:
            assert await again.close_code() == 4429
        async with Socket.open(capped, TRANSPORT_WS, headers=other) as elsewhere:
            assert _acked(await elsewhere.init())


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_socket_that_runs_nothing_and_says_nothing_is_closed_4410(
    make_server: ServerFactory, protocol: str
) -> None:
    idle, app = await make_server(ws_idle_seconds=0.5)
    alice = await idle.sign_up("idler")
    async with Socket.open(idle, protocol) as anonymous:
        assert _acked(await anonymous.init())
        assert await asyncio.wait_for(anonymous.close_code(), WAIT) == 4410
    async with Socket.open(idle, protocol) as signed_in:
        assert _acked(await signed_in.init(alice.token))
        assert await asyncio.wait_for(signed_in.close_code(), WAIT) == 4410
    await _until(lambda: app[SOCKETS].total == 0 and app[SOCKETS].of(alice.login) == 0)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_running_subscription_keeps_its_socket_from_idling_until_it_ends(
    make_server: ServerFactory, protocol: str
) -> None:
    idle, app = await make_server(ws_idle_seconds=0.3)
    alice = await idle.sign_up("lively")
    name = await create_room(idle, alice)
    async with Socket.open(idle, protocol) as socket:
        assert _acked(await socket.init(alice.token))
        operation_id = await socket.start(SUBSCRIBE, {"r": name})
        await _until(lambda: _followers(app, name) == 1)
        await asyncio.sleep(1.5)  # five idle periods: nothing closes a socket with a subscription
        await post(idle, alice, name, "still here")
        message = await socket.receive()
        assert message is not None and message["payload"]["data"]["roomMessages"]["content"] == "still here"
        await socket.send(_stop(socket, operation_id))
        await _until(lambda: _followers(app, name) == 0)
        assert await asyncio.wait_for(socket.close_code(), WAIT) == 4410


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_operations_are_capped_per_socket_and_per_user(
    make_server: ServerFactory, protocol: str
) -> None:
    capped, app = await make_server(max_subscriptions_per_socket=2, max_subscriptions_per_user=3)
    counts = app[SOCKETS]
    alice = await capped.sign_up("busy")
    name = await create_room(capped, alice)
    async with Socket.open(capped, protocol) as first, Socket.open(capped, protocol) as second:
        assert _acked(await first.init(alice.token))
        assert _acked(await second.init(alice.token))
        kept = [await first.start(SUBSCRIBE, {"r": name}) for _ in range(2)]
        await _until(lambda: _followers(app, name) == 2)

        one_too_many = await first.start(SUBSCRIBE, {"r": name})
        error = _refusal(await first.receive(), one_too_many)
        assert error["extensions"] == {"code": "QUERY_TOO_COMPLEX", "limit": 2}, error

        await second.start(SUBSCRIBE, {"r": name})
        await _until(lambda: _followers(app, name) == 3)
        over_user = await second.start(SUBSCRIBE, {"r": name})
        error = _refusal(await second.receive(), over_user)
        assert error["extensions"] == {"code": "QUERY_TOO_COMPLEX", "limit": 3}, error
        assert counts.operations_of(alice.login) == 3

        # The sockets stay open: once one ends, another may start.
        await first.send(_stop(first, kept[0]))
        await _until(lambda: _followers(app, name) == 2 and counts.operations_of(alice.login) == 2)
        await first.start(SUBSCRIBE, {"r": name})
        await _until(lambda: _followers(app, name) == 3)
        await post(capped, alice, name, "to all three")
        for socket, expected in ((first, 2), (second, 1)):
            seen: list[str] = []
            while len(seen) < expected:
                message = await socket.receive()
                assert message is not None
                if message["type"] in {"next", "data"}:
                    seen.append(message["payload"]["data"]["roomMessages"]["content"])
            assert seen == ["to all three"] * expected
    await _until(lambda: counts.operations_of(alice.login) == 0)


async def test_a_subscription_that_selects_more_than_the_cost_limit_is_refused_when_it_starts(
    make_server: ServerFactory,
) -> None:
    """Costed per event as a query of the same selection would be, before anything runs."""
    cheap, app = await make_server(max_cost=500)
    alice = await cheap.sign_up("costly")
    name = await create_room(cheap, alice)
    query = "query($r: String!, $n: Int!) { room(name: $r) { " + PARTICIPANTS + " } }"
    expensive = (
        "subscription($r: String!, $n: Int!) { roomMessages(room: $r) { room { " + PARTICIPANTS + " } } }"
    )
    over_http = await cheap.error(query, {"r": name, "n": 100}, token=alice.token)
    assert over_http["extensions"]["code"] == "QUERY_TOO_COMPLEX"
    async with Socket.open(cheap, TRANSPORT_WS) as socket:
        assert _acked(await socket.init(alice.token))
        operation_id = await socket.start(expensive, {"r": name, "n": 100})
        error = _refusal(await socket.receive(), operation_id)
        assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"
        assert error["extensions"]["limit"] == 500
        # The same list under the event's own field, and nothing else: the query's cost and one.
        assert error["extensions"]["cost"] == over_http["extensions"]["cost"] + 1
        assert _followers(app, name) == 0
        await socket.start(expensive, {"r": name, "n": 2})
        await _until(lambda: _followers(app, name) == 1)


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_answers_to_a_socket_that_is_closing_are_dropped_without_a_word_in_the_log(
    api: Api, protocol: str
) -> None:
    """The socket closes while an operation runs (``graphql-transport-ws`` closes it with
    4400 for a message of no known type, legacy ``graphql-ws`` on ``connection_terminate``),
    and the client is slow to answer the close: the operation's answer, ready meanwhile, has
    nowhere to go. Strawberry logged ``WebSocketDisconnected`` at ERROR for it (its
    ``graphql-transport-ws`` operation tasks, and legacy tasks whose failure nobody read)."""
    alice, bob = await api.sign_up("closing"), await api.sign_up("closer")
    name = await create_room(api, bob)  # alice is not in it: her subscription is refused after reads
    with watching() as log:
        for _ in range(3):
            async with Socket.open(api, protocol) as socket:
                assert _acked(await socket.init(alice.token))
                if protocol == TRANSPORT_WS:
                    await socket.start(MY_ROOMS)
                    await socket.send({"type": "goodbye"})
                else:
                    await socket.start(SUBSCRIBE, {"r": name})
                    await socket.send({"type": "connection_terminate"})
                await asyncio.sleep(1.0)  # not reading: the server's close waits for the answer
                assert await asyncio.wait_for(socket.close_code(), WAIT) in {1000, 4400}
        gc.collect()
        await asyncio.sleep(0.1)
    assert log.take() == []
    assert log.known == 0
