"""Three real gateway processes on their own ports, one Redis broker, the test run's keyspace.

Each test talks to a chosen process, so what it proves is that an event crossed
processes: it can only have travelled through Redis. Subscriptions are known to be
live once Redis counts the processes subscribed to their channel.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from gql import GraphQLRequest

from devnode.redis import RedisServer
from gateway.contacts.service import contacts_channel
from gateway.messenger.events import user_messages_channel
from gateway.rooms.events import room_channel
from gateway.settings import Settings
from tests.client import Account, Api
from tests.processes import Gateway, start_gateway
from tests.redis_helpers import WAIT, redis_server, wait_subscribers
from tests.test_contacts_support import DISCOVERED, UPLOAD, fresh_phone, linked
from tests.test_messenger import send
from tests.test_messenger_concurrency import concurrent_sends_count_exactly
from tests.test_rooms import DELETE, JOIN, create_room
from tests.webhook import CodeReceiver

RECEIVED = "subscription { messageReceived { id content sender { login } } }"
ROOM = "subscription($r: String!) { roomMessages(room: $r) { content systemMessage } }"


@pytest.fixture(scope="module")
def broker(base_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Any:
    with redis_server(base_settings, tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture(scope="module")
async def gateways(
    base_settings: Settings,
    broker: RedisServer,
    server: Any,
    tmp_path_factory: pytest.TempPathFactory,
) -> AsyncIterator[tuple[Gateway, Gateway, Gateway]]:
    """Gateways A, B and C; ``server`` first, so the keyspace exists and is migrated."""
    logs = tmp_path_factory.mktemp("gateways")
    started = await asyncio.gather(
        *(start_gateway(base_settings, logs, GATEWAY_BROKER_URL=broker.url) for _ in range(3))
    )
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
    gateways: tuple[Gateway, Gateway, Gateway], broker: RedisServer, base_settings: Settings
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
    gateways: tuple[Gateway, Gateway, Gateway], broker: RedisServer, base_settings: Settings
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
    broker: RedisServer,
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
