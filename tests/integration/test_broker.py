"""The Redis broker: events cross gateway instances, one connection per process, and a
lost broker ends subscriptions with UNAVAILABLE while queries and mutations go on.

Each instance here has its own broker client and its own Redis connections, so an
event that reaches another instance went through Redis. The gateways run as real
processes in ``test_multiprocess.py``; here they share the test's process so the
broker can be stopped and restarted under them.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
import redis.asyncio as aioredis
from aiohttp import web
from gql.transport.exceptions import TransportQueryError

from devnode.redis import RedisServer
from gateway.broker.pubsub import FELL_BEHIND
from gateway.broker.redis_client import CLOSE_TIMEOUT, close_within
from gateway.broker.redis_pubsub import RedisPubSub
from gateway.broker.sessions import REVOCATIONS
from gateway.errors import BrokerUnavailable
from gateway.messenger.events import user_messages_channel
from gateway.schema import event_codec
from gateway.server.app import SERVICES
from gateway.settings import Settings
from tests.support.broker import _broker_state, _readyz, _received
from tests.support.client import Api
from tests.support.messenger import send
from tests.support.redis_helpers import WAIT, private_redis, wait_subscribers

__all__ = ["private_redis"]


async def _brokered(make_server: Any, server: RedisServer) -> tuple[Api, web.Application]:
    api, app = await make_server(broker_url=server.url)
    pubsub = app[SERVICES].pubsub
    assert isinstance(pubsub, RedisPubSub)
    await asyncio.wait_for(pubsub.connected(), WAIT)
    return api, app


async def test_events_cross_instances_through_redis(
    api: Api, make_server: Any, private_redis: RedisServer, base_settings: Settings
) -> None:
    api_a, _ = await _brokered(make_server, private_redis)
    api_b, _ = await _brokered(make_server, private_redis)
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    channel = f"{base_settings.keyspace}:{user_messages_channel(bob.login)}"
    async with _received(api_b, bob) as on_b:
        await wait_subscribers(private_redis.url, channel, 1)
        sent = await send(api_a, alice, bob.login, "through the broker")
        event = await asyncio.wait_for(on_b.get(), WAIT)
        assert event == {"id": sent["id"], "content": "through the broker", "sender": {"login": alice.login}}


async def test_one_broker_connection_carries_every_subscription_of_a_process(
    api: Api, make_server: Any, private_redis: RedisServer, base_settings: Settings
) -> None:
    api_a, _ = await _brokered(make_server, private_redis)
    accounts = [await api.sign_up("many") for _ in range(4)]
    async with contextlib.AsyncExitStack() as stack:
        for account in accounts:
            await stack.enter_async_context(_received(api_a, account))
        for account in accounts:
            channel = f"{base_settings.keyspace}:{user_messages_channel(account.login)}"
            await wait_subscribers(private_redis.url, channel, 1)
        await wait_subscribers(private_redis.url, f"{base_settings.keyspace}:{REVOCATIONS}", 1)
        connection = aioredis.from_url(private_redis.url)
        try:
            clients = await connection.client_list(_type="pubsub")
            channels = await connection.pubsub_channels()
        finally:
            await connection.aclose()
        # One connection carries every channel of the process: the four users' messages,
        # the one channel of session revocations, and whatever else the process listens to.
        assert len(clients) == 1, clients
        assert int(clients[0]["sub"]) == len(channels) >= len(accounts) + 1
        assert f"{base_settings.keyspace}:{REVOCATIONS}".encode() in channels


async def test_a_lost_broker_ends_subscriptions_and_queries_go_on(
    api: Api, make_server: Any, private_redis: RedisServer, base_settings: Settings
) -> None:
    api_a, app_a = await _brokered(make_server, private_redis)
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    channel = f"{base_settings.keyspace}:{user_messages_channel(bob.login)}"
    assert (await _readyz(api_a))[1]["broker"] == "ok"

    async with _received(api_a, bob) as events:
        await wait_subscribers(private_redis.url, channel, 1)
        await asyncio.to_thread(private_redis.stop)

        ended = await asyncio.wait_for(events.get(), WAIT)
        assert isinstance(ended, TransportQueryError), ended
        assert ended.errors and ended.errors[0]["extensions"]["code"] == "UNAVAILABLE"

    # Ready still (Cassandra answers), and says the broker is gone.
    body = await _broker_state(api_a, "unreachable")
    assert body["status"] == "ready"
    # Mutations and queries work; the event of this send is dropped, the message is stored.
    sent = await send(api_a, alice, bob.login, "while the broker is down")
    data = await api_a.ok(
        "query($w: String!) { me { conversation(with: $w) { messages(first: 1) { nodes { id } } } } }",
        {"w": alice.login},
        token=bob.token,
    )
    assert data["me"]["conversation"]["messages"]["nodes"] == [{"id": sent["id"]}]
    # A new subscription is refused with the same code.
    async with _received(api_a, bob) as refused:
        error = await asyncio.wait_for(refused.get(), WAIT)
        assert isinstance(error, TransportQueryError), error
        assert error.errors and error.errors[0]["extensions"]["code"] == "UNAVAILABLE"

    await asyncio.to_thread(private_redis.start)
    await _broker_state(api_a, "ok")
    async with _received(api_a, bob) as again:
        await wait_subscribers(private_redis.url, channel, 1)
        back = await send(api_a, alice, bob.login, "broker is back")
        event = await asyncio.wait_for(again.get(), WAIT)
        assert event["id"] == back["id"]
    assert app_a[SERVICES].pubsub.state == "ok"


async def test_a_close_that_never_ends_is_given_up_after_its_bound() -> None:
    """redis-py's ``aclose`` can wait forever for a broken socket (redis/redis-py#3941);
    shutting down or reconnecting waits at most ``CLOSE_TIMEOUT`` for it."""
    never = asyncio.Event()
    loop = asyncio.get_running_loop()
    started = loop.time()
    await close_within(never.wait(), "a connection that never closes")
    assert CLOSE_TIMEOUT <= loop.time() - started < CLOSE_TIMEOUT + 1


async def test_a_subscriber_that_falls_behind_through_redis_ends_with_unavailable(
    private_redis: RedisServer,
) -> None:
    """Past its bound of queued events, a process's subscriber of a channel (the live hub's
    reader, for all the channel's sockets of the process) has its backlog dropped and ends
    with UNAVAILABLE saying how to catch up; another subscriber of the channel keeps going."""
    pubsub = RedisPubSub(private_redis.url, event_codec(), namespace="behind", queue_size=3)
    await pubsub.start()
    try:
        await asyncio.wait_for(pubsub.connected(), WAIT)
        async with pubsub.subscribe("c") as slow, pubsub.subscribe("c") as keeping_up:
            received = []
            for n in range(6):
                await pubsub.publish("c", {"n": n})
                received.append(await asyncio.wait_for(anext(keeping_up), WAIT))
            assert received == [{"n": n} for n in range(6)]
            backlog = []  # what is left of it before the end: in order, never past the bound
            with pytest.raises(BrokerUnavailable) as ended:
                while True:
                    backlog.append(await asyncio.wait_for(anext(slow), WAIT))
            assert str(ended.value) == FELL_BEHIND
            assert len(backlog) <= 3 and backlog == sorted(backlog, key=lambda event: event["n"])
            await pubsub.publish("c", {"n": 6})
            assert await asyncio.wait_for(anext(keeping_up), WAIT) == {"n": 6}
    finally:
        await pubsub.aclose()
