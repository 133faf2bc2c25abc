"""The broker on a Redis Cluster of three masters: sharded pub/sub, one subscriber connection
per master, and what a client sees while one master is stopped.

Two gateway instances share the test's process (so a master can be stopped under them) but
each has its own cluster clients and connections: an event that reaches the other went
through the cluster. The multi-process tests run against the cluster too
(``test_multiprocess.py``, ``test_presence_processes.py``, ``test_shared_state.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any

import pytest
import redis.asyncio as aioredis
from aiohttp import web
from gql.transport.exceptions import TransportQueryError

from devnode.redis import LocalRedisCluster
from gateway.broker.redis_pubsub import RedisPubSub
from gateway.messenger.events import user_messages_channel
from gateway.server.app import SERVICES
from gateway.settings import Settings
from tests.support.broker import _broker_state, _readyz, _received
from tests.support.client import Account, Api
from tests.support.messenger import send
from tests.support.metrics import scrape, value
from tests.support.redis_helpers import WAIT, connection, master_of, redis_cluster, wait_subscribers

CONVERSATION = "query($w: String!) { me { conversation(with: $w) { messages(first: 5) { nodes { id } } } } }"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedisCluster]:
    with redis_cluster(tmp_path_factory.mktemp("cluster")) as started:
        yield started


async def _brokered(make_server: Any, cluster: LocalRedisCluster) -> tuple[Api, web.Application]:
    api, app = await make_server(broker_url=cluster.url)
    pubsub = app[SERVICES].pubsub
    assert isinstance(pubsub, RedisPubSub) and pubsub.sharded
    await asyncio.wait_for(pubsub.connected(), WAIT)
    return api, app


def _channel(settings: Settings, login: str) -> str:
    return f"{settings.keyspace}:{user_messages_channel(login)}"


async def _users_on_distinct_masters(
    api: Api, cluster: LocalRedisCluster, settings: Settings, count: int
) -> dict[str, Account]:
    """Accounts whose message channels live on ``count`` different masters, by master."""
    found: dict[str, Account] = {}
    while len(found) < count:
        account = await api.sign_up("shard")
        found.setdefault(await master_of(cluster.url, _channel(settings, account.login)), account)
    return found


async def test_channels_are_sharded_over_the_masters_each_carried_by_one_connection_to_it(
    api: Api, make_server: Any, cluster: LocalRedisCluster, base_settings: Settings
) -> None:
    api_a, _ = await _brokered(make_server, cluster)
    api_b, app_b = await _brokered(make_server, cluster)
    alice = await api.sign_up("alice")
    bobs = await _users_on_distinct_masters(api, cluster, base_settings, 3)
    async with contextlib.AsyncExitStack() as stack:
        inboxes = {
            master: await stack.enter_async_context(_received(api_b, bob)) for master, bob in bobs.items()
        }
        for bob in bobs.values():
            await wait_subscribers(cluster.url, _channel(base_settings, bob.login), 1)
        for master, bob in bobs.items():
            sent = await send(api_a, alice, bob.login, f"through {master}")
            event = await asyncio.wait_for(inboxes[master].get(), WAIT)
            assert event["id"] == sent["id"]
        async with connection(cluster.url) as client:
            assert isinstance(client, aioredis.RedisCluster)
            await client.initialize()
            assert len(client.get_primaries()) == 3
            for master, bob in bobs.items():
                channel = _channel(base_settings, bob.login)
                # Sharded: known to its slot's master only, and not a channel of plain pub/sub.
                for node in client.get_primaries():
                    [(_, shard)] = await client.pubsub_shardnumsub(channel, target_nodes=node)
                    [(_, plain)] = await client.pubsub_numsub(channel, target_nodes=node)
                    assert (shard, plain) == ((1, 0) if node.name == master else (0, 0)), node.name
            # Each process holds one subscriber connection to each master, whatever it carries
            # (B listens on all three; A only to what every process listens to), all sharded.
            pubsub = app_b[SERVICES].pubsub
            assert isinstance(pubsub, RedisPubSub)
            assert pubsub.shards() == {node.name: True for node in client.get_primaries()}
            for node in client.get_primaries():
                clients = await client.client_list(_type="pubsub", target_nodes=node)
                assert 1 <= len(clients) <= 2, (node.name, clients)
                assert all(c["sub"] == "0" and int(c["ssub"]) >= 1 for c in clients), clients


async def test_a_stopped_master_ends_only_its_channels_subscriptions_and_they_resume_once_it_is_back(
    api: Api, make_server: Any, cluster: LocalRedisCluster, base_settings: Settings
) -> None:
    """What a client sees: the subscription whose channel lives on the stopped master ends
    with ``UNAVAILABLE`` and a new one is refused the same way; another master's subscription
    goes on receiving; mutations and queries answer, and what was sent meanwhile is stored
    (a client catches up by querying); ``/readyz`` stays 200 and says ``degraded``. Once the
    master is back the client resubscribes and receives again."""
    api_a, _ = await _brokered(make_server, cluster)
    api_b, _ = await _brokered(make_server, cluster)
    alice = await api.sign_up("alice")
    (doomed_master, doomed), (spared_master, spared) = list(
        (await _users_on_distinct_masters(api, cluster, base_settings, 2)).items()
    )
    number = [f"127.0.0.1:{port}" for port in cluster.ports].index(doomed_master) + 1
    stopped = False
    try:
        async with _received(api_b, doomed) as on_doomed, _received(api_b, spared) as on_spared:
            for bob in (doomed, spared):
                await wait_subscribers(cluster.url, _channel(base_settings, bob.login), 1)
            await asyncio.to_thread(cluster.stop, number)
            stopped = True

            ended = await asyncio.wait_for(on_doomed.get(), WAIT)
            assert isinstance(ended, TransportQueryError), ended
            assert ended.errors is not None
            [error] = ended.errors
            print(f"subscription on the stopped master {doomed_master} ended with {error}")
            assert error["extensions"]["code"] == "UNAVAILABLE"
            assert error["message"] == "Live updates are unavailable right now; resubscribe later."

            # The other master's channel goes on, from A to B.
            live = await send(api_a, alice, spared.login, f"through {spared_master}")
            assert (await asyncio.wait_for(on_spared.get(), WAIT))["id"] == live["id"]

        for gateway in (api_a, api_b):
            body = await _broker_state(gateway, "degraded")
            assert body["status"] == "ready"
        samples = await scrape(api_b)
        assert value(samples, "gateway_broker_up") == 0
        shards = ("gateway_broker_shards_unreachable", "gateway_broker_shards")
        assert [value(samples, name) for name in shards] == [1, 3]

        # A send to the user whose channel is down is stored; its event is dropped, and the
        # message is there for a query (on either process).
        missed = await send(api_a, alice, doomed.login, "while its master is down")
        data = await api_b.ok(CONVERSATION, {"w": alice.login}, token=doomed.token)
        assert data["me"]["conversation"]["messages"]["nodes"] == [{"id": missed["id"]}]
        # A new subscription to that channel is refused clearly; one to another master's starts.
        async with _received(api_b, doomed) as refused:
            error = await asyncio.wait_for(refused.get(), WAIT)
            assert isinstance(error, TransportQueryError), error
            assert error.errors is not None and error.errors[0]["extensions"]["code"] == "UNAVAILABLE"
        async with _received(api_b, spared) as again:
            await wait_subscribers(cluster.url, _channel(base_settings, spared.login), 1)
            live = await send(api_a, alice, spared.login, "still live")
            assert (await asyncio.wait_for(again.get(), WAIT))["id"] == live["id"]

        await asyncio.to_thread(cluster.start_node, number)
        stopped = False
        for gateway in (api_a, api_b):
            await _broker_state(gateway, "ok")
        assert value(await scrape(api_b), "gateway_broker_up") == 1
        async with _received(api_b, doomed) as resumed:
            await wait_subscribers(cluster.url, _channel(base_settings, doomed.login), 1)
            back = await send(api_a, alice, doomed.login, "its master is back")
            assert (await asyncio.wait_for(resumed.get(), WAIT))["id"] == back["id"]
        assert (await _readyz(api_b))[1]["broker"] == "ok"
    finally:
        if stopped:
            await asyncio.to_thread(cluster.start_node, number)
