"""Three real gateway processes on their own ports, one broker, the test run's keyspace; every
test runs against one Redis server and against a Redis Cluster of three masters (sharded
pub/sub, state keyed to one master each).

Each test talks to a chosen process, so what it proves is that an event, a revocation,
a persisted query or a rate limit crossed processes: it can only have travelled through
Redis. Subscriptions are known to be live once Redis counts the processes subscribed to
their channel. The processes run with generous limits but for anonymous comments
(3 per hour per address) and a sign-in back-off of a minute, which only the rate-limit
test reaches.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from gql import GraphQLRequest

from gateway.broker.sessions import REVOCATIONS
from gateway.contacts.events import contacts_channel
from gateway.messenger.events import user_messages_channel
from gateway.rooms.events import room_channel
from gateway.settings import Settings
from tests.support.blog import ADD_COMMENT, comment_input, publish
from tests.support.client import Account, Api
from tests.support.contacts import (
    DISCOVERED,
    UPLOAD,
    concurrent_claims_of_one_identity_one_wins,
    fresh_phone,
    linked,
)
from tests.support.messenger import concurrent_sends_count_exactly, send
from tests.support.persisted import codes, persisted, post
from tests.support.processes import Gateway, start_gateway
from tests.support.rate_limits import retry_after, sign_in
from tests.support.redis_helpers import BROKER_KINDS, WAIT, Broker, private_broker, wait_subscribers
from tests.support.rooms import DELETE, JOIN, create_room, thirty_concurrent_joins_are_all_counted
from tests.support.webhook import CodeReceiver
from tests.support.ws_protocol import TRANSPORT_WS, Socket

#: Seconds within which a sign-out on one process closes the session's sockets on another.
SIGN_OUT_WAIT = 5.0
ME = "{ me { id } }"
RECEIVED = "subscription { messageReceived { id content sender { login } } }"
ROOM = "subscription($r: String!) { roomMessages(room: $r) { content systemMessage } }"


@pytest.fixture(scope="module", params=BROKER_KINDS)
def broker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    with private_broker(request.param, tmp_path_factory.mktemp(request.param)) as server:
        yield server


@pytest.fixture(scope="module")
async def gateways(
    base_settings: Settings,
    broker: Broker,
    server: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[tuple[Gateway, Gateway, Gateway]]:
    """Gateways A, B and C; ``server`` first, so the keyspace exists and is migrated."""
    logs = tmp_path_factory.mktemp("gateways")
    env = {
        **base_settings.rate_variables(),
        "GATEWAY_RATE_COMMENTS": "3/h",
        "GATEWAY_SIGN_IN_BACKOFF": "60",
        "GATEWAY_BROKER_URL": broker.url,
    }
    started = await asyncio.gather(*(start_gateway(base_settings, logs, **env) for _ in range(3)))
    yield started[0], started[1], started[2]
    codes = await asyncio.gather(*(g.stop() for g in started))
    assert codes == [0, 0, 0], [g.output() for g in started]


def _channel(settings: Settings, channel: str) -> str:
    return f"{settings.keyspace}:{channel}"


@contextlib.asynccontextmanager
async def _subscription(
    api: Api, account: Account, query: str, variables: dict[str, Any] | None = None
) -> AsyncIterator[asyncio.Queue[Any]]:
    """A running subscription; the queue gets each event, then ``None`` when the server ends it."""
    events: asyncio.Queue[Any] = asyncio.Queue()

    async def run() -> None:
        async with api.websocket(account.token) as session:
            async for result in session.subscribe(GraphQLRequest(query, variable_values=variables)):
                await events.put(result)
        await events.put(None)

    task = asyncio.create_task(run())
    try:
        yield events
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_message_sent_on_a_reaches_b_and_c_exactly_once(
    gateways: tuple[Gateway, Gateway, Gateway], broker: Broker, base_settings: Settings
) -> None:
    a, b, c = gateways
    alice = await a.api.sign_up("alice")
    bob = await a.api.sign_up("bob")
    channel = _channel(base_settings, user_messages_channel(bob.login))
    async with (
        _subscription(b.api, bob, RECEIVED) as on_b,
        _subscription(c.api, bob, RECEIVED) as on_c,
    ):
        await wait_subscribers(broker.url, channel, 2)
        first = await send(a.api, alice, bob.login, "from A")
        second = await send(a.api, alice, bob.login, "from A again")
        for events in (on_b, on_c):
            # In order, and the second right after the first: the first came once.
            got = [await asyncio.wait_for(events.get(), WAIT) for _ in range(2)]
            assert [g["messageReceived"]["id"] for g in got] == [first["id"], second["id"]]
            assert got[0]["messageReceived"]["sender"] == {"login": alice.login}
        await asyncio.sleep(0)
        assert on_b.empty() and on_c.empty()


async def test_a_room_deleted_on_a_ends_the_subscription_on_b(
    gateways: tuple[Gateway, Gateway, Gateway], broker: Broker, base_settings: Settings
) -> None:
    a, b, _ = gateways
    alice = await a.api.sign_up("alice")
    bob = await a.api.sign_up("bob")
    name = await create_room(a.api, alice)
    await a.api.ok(JOIN, {"n": name}, token=bob.token)
    async with _subscription(b.api, bob, ROOM, {"r": name}) as on_b:
        await wait_subscribers(broker.url, _channel(base_settings, room_channel(name)), 1)
        await a.api.ok(DELETE, {"n": name}, token=alice.token)
        last = await asyncio.wait_for(on_b.get(), WAIT)
        assert last["roomMessages"] == {"content": f"{alice.login} deleted the room", "systemMessage": True}
        assert await asyncio.wait_for(on_b.get(), WAIT) is None


async def test_a_contact_discovered_on_a_is_announced_on_b(
    gateways: tuple[Gateway, Gateway, Gateway],
    broker: Broker,
    base_settings: Settings,
    codes: CodeReceiver,
) -> None:
    a, b, _ = gateways
    uploader = await a.api.sign_up("book")
    owner = await a.api.sign_up("late")
    phone = fresh_phone()
    await a.api.ok(
        UPLOAD, {"network": "tel", "contacts": [{"networkId": phone, "name": "Late"}]}, token=uploader.token
    )
    async with _subscription(b.api, uploader, DISCOVERED) as on_b:
        await wait_subscribers(broker.url, _channel(base_settings, contacts_channel(uploader.login)), 1)
        await linked(a.api, codes, owner.token, "tel", phone)
        event = await asyncio.wait_for(on_b.get(), WAIT)
        assert event["contactDiscovered"]["user"] == {"login": owner.login}
        assert event["contactDiscovered"]["name"] == "Late"


async def test_concurrent_sends_on_two_processes_count_exactly(
    gateways: tuple[Gateway, Gateway, Gateway],
) -> None:
    a, b, _ = gateways
    await concurrent_sends_count_exactly(a.api, b.api)


async def test_sign_out_on_a_closes_the_sessions_socket_on_b_with_4403(
    gateways: tuple[Gateway, Gateway, Gateway], broker: Broker, base_settings: Settings
) -> None:
    """B's socket runs a subscription and sends nothing more: only the revocation
    published through Redis can tell it (without a broker it would live until expiry)."""
    a, b, _ = gateways
    alice = await a.api.sign_up("leaver")
    name = await create_room(a.api, alice)
    async with Socket.open(b.api, TRANSPORT_WS) as socket:
        acked = await socket.init(alice.token)
        assert acked is not None and acked["type"] == "connection_ack"
        await socket.start(ROOM, {"r": name})
        await wait_subscribers(broker.url, _channel(base_settings, REVOCATIONS), 3)
        await wait_subscribers(broker.url, _channel(base_settings, room_channel(name)), 1)

        assert (await a.api.ok("mutation { signOut }", token=alice.token))["signOut"] is True
        assert await asyncio.wait_for(socket.close_code(), SIGN_OUT_WAIT) == 4403


async def test_sign_out_on_a_refuses_the_token_on_b_at_the_very_next_request(
    gateways: tuple[Gateway, Gateway, Gateway], broker: Broker, base_settings: Settings
) -> None:
    """B knows the session (its second request reads no ``sessions`` row); the revocation
    published through Redis drops it there before ``signOut`` on A answers."""
    a, b, _ = gateways
    alice = await a.api.sign_up("cacheleaver")
    await wait_subscribers(broker.url, _channel(base_settings, REVOCATIONS), 3)
    assert (await b.api.call(ME, token=alice.token)).statements == 1
    known = await b.api.call(ME, token=alice.token)
    assert known.result["me"]["id"] and known.statements == 0

    assert (await a.api.ok("mutation { signOut }", token=alice.token))["signOut"] is True
    refused = await b.api.call(ME, token=alice.token)
    assert refused.codes == ["UNAUTHENTICATED"]
    assert refused.statements == 1


async def test_sign_out_on_a_closes_sockets_authorised_by_header_or_by_mutation_on_b(
    gateways: tuple[Gateway, Gateway, Gateway], broker: Broker, base_settings: Settings
) -> None:
    """However a socket on B became authenticated (the upgrade request's header, a
    ``signIn`` sent over it), a sign-out on A reaches it through Redis."""
    a, b, _ = gateways
    alice = await a.api.sign_up("hdrleaver")
    header = {"Authorization": f"Bearer {alice.token}"}
    async with (
        Socket.open(b.api, TRANSPORT_WS, headers=header) as by_header,
        Socket.open(b.api, TRANSPORT_WS) as by_mutation,
    ):
        for socket in (by_header, by_mutation):
            acked = await socket.init()
            assert acked is not None and acked["type"] == "connection_ack"
        signed_in = await by_mutation.result(
            "mutation($l: String!, $p: String!) { signIn(login: $l, password: $p) { token } }",
            {"l": alice.login, "p": alice.password},
        )
        assert signed_in is not None
        second = signed_in["data"]["signIn"]["token"]
        await wait_subscribers(broker.url, _channel(base_settings, REVOCATIONS), 3)
        for token in (alice.token, second):
            assert (await a.api.ok("mutation { signOut }", token=token))["signOut"] is True
        codes = await asyncio.wait_for(
            asyncio.gather(by_header.close_code(), by_mutation.close_code()), SIGN_OUT_WAIT
        )
        assert list(codes) == [4403, 4403]


async def test_a_query_persisted_on_a_runs_by_hash_on_b_and_c(
    gateways: tuple[Gateway, Gateway, Gateway],
) -> None:
    a, b, c = gateways
    document = 'query CrossProcess { user(login: "nobody-multiprocess") { login } }'
    status, result = await post(b.api, {"extensions": persisted(document)})
    assert codes(result) == ["PERSISTED_QUERY_NOT_FOUND"], "unknown before it is registered"
    status, result = await post(a.api, {"query": document, "extensions": persisted(document)})
    assert (status, result["data"]) == (200, {"user": None})
    for other in (b, c):
        status, result = await post(other.api, {"extensions": persisted(document)})
        assert (status, result.get("errors"), result["data"]) == (200, None, {"user": None})


async def test_a_rate_limit_reached_on_a_holds_on_b_and_c(gateways: tuple[Gateway, Gateway, Gateway]) -> None:
    """One bucket (anonymous comments, 3 per hour per address) and one back-off (a login's
    failed sign-ins): spent on A, refused on B and C."""
    a, b, c = gateways
    author = await a.api.sign_up("limited")
    slug = (await publish(a.api, author.token))["slug"]
    variables = {"slug": slug, "input": comment_input()}
    spent = [await a.api.call(ADD_COMMENT, variables) for _ in range(3)]
    assert [r.codes for r in spent] == [[]] * 3
    for other in (b, c):
        refused = await other.api.call(ADD_COMMENT, variables)
        assert 1000 < retry_after(refused) <= 1200, refused

    victim = await a.api.sign_up("guessed")
    failures = [await sign_in(a.api, victim.login, f"guess-{n}") for n in range(5)]
    assert [r.codes for r in failures] == [["UNAUTHENTICATED"]] * 5
    for other in (b, c):
        refused = await sign_in(other.api, victim.login, victim.password)
        assert 50 < retry_after(refused) <= 60, refused


async def test_concurrent_joins_on_two_processes_are_all_counted(
    gateways: tuple[Gateway, Gateway, Gateway],
) -> None:
    a, b, _ = gateways
    await thirty_concurrent_joins_are_all_counted(a.api, b.api)


async def test_concurrent_claims_on_two_processes_leave_one_winner(
    gateways: tuple[Gateway, Gateway, Gateway], codes: CodeReceiver
) -> None:
    a, b, _ = gateways
    await concurrent_claims_of_one_identity_one_wins(a.api, b.api, codes)
