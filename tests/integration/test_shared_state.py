"""State the broker keeps or carries for every process (rate limits, persisted queries,
session revocations): what it holds, and what each kind does while the broker is down,
on a private broker the tests stop: one Redis server, and a Redis Cluster of three masters
(each key on the master of its slot; the whole cluster stopped).

Across real processes the same state is proven shared in ``test_multiprocess.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from gateway.broker.redis_pubsub import RedisPubSub
from gateway.broker.sessions import REVOCATIONS
from gateway.http.session_watch import BROKER_POLL_SECONDS
from gateway.server.app import SERVICES
from gateway.settings import Settings
from tests.support.client import Api, Response
from tests.support.messenger import send
from tests.support.persisted import codes, persisted, post
from tests.support.rate_limits import sign_in
from tests.support.redis_helpers import (
    BROKER_KINDS,
    WAIT,
    Broker,
    connection,
    private_broker,
    wait_subscribers,
)
from tests.support.ws_protocol import TRANSPORT_WS, Socket


@pytest.fixture(params=BROKER_KINDS)
def private_redis(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Broker]:
    with private_broker(request.param, tmp_path) as broker:
        yield broker


async def _brokered(make_server: Any, server: Broker, **overrides: Any) -> tuple[Api, web.Application]:
    api, app = await make_server(broker_url=server.url, **overrides)
    pubsub = app[SERVICES].pubsub
    assert isinstance(pubsub, RedisPubSub)
    await asyncio.wait_for(pubsub.connected(), WAIT)
    return api, app


async def _keys(url: str, pattern: str) -> dict[str, int]:
    """The keys matching ``pattern``, each with its time to live in milliseconds."""
    async with connection(url) as client:
        if "*" not in pattern:  # one key: asked of its own master, no scan of every key
            ttl = await client.pttl(pattern)
            return {} if ttl == -2 else {pattern: ttl}
        return {key.decode(): await client.pttl(key) async for key in client.scan_iter(pattern)}


async def test_buckets_and_failures_live_in_the_broker_and_expire_when_idle(
    make_server: Any, private_redis: Broker, base_settings: Settings
) -> None:
    api, _ = await _brokered(make_server, private_redis, rate_sends="60/m")
    alice = await api.sign_up("keyed")
    bob = await api.sign_up("keyed")
    await send(api, alice, bob.login, "one token")
    assert (await sign_in(api, alice.login, "wrong")).codes == ["UNAUTHENTICATED"]

    prefix = f"{base_settings.keyspace}:rate:"
    sends = await _keys(private_redis.url, f"{prefix}send:{alice.login}")
    # One token of 60/m refills in a second; the key outlives that by at most a second.
    assert list(sends) == [f"{prefix}send:{alice.login}"]
    assert 0 < next(iter(sends.values())) <= 2000
    failures = await _keys(private_redis.url, f"{prefix}sign_in_failures:*")
    assert len(failures) == 1 and 86_000_000 < next(iter(failures.values())) <= 86_400_000
    # A success forgets the failures: the key is gone, not zeroed.
    await api.ok(
        "mutation($l: String!, $p: String!) { signIn(login: $l, password: $p) { token } }",
        {"l": alice.login, "p": alice.password},
    )
    assert await _keys(private_redis.url, f"{prefix}sign_in_failures:*") == {}
    # ... and remembers the address the login signed in from, for 30 days.
    familiar = await _keys(private_redis.url, f"{prefix}sign_in_familiar:{alice.login}@*")
    assert len(familiar) == 1 and 2_591_000_000 < next(iter(familiar.values())) <= 2_592_000_000


async def test_a_lost_broker_refuses_sign_ins_and_allows_sends_until_it_is_back(
    make_server: Any, private_redis: Broker
) -> None:
    api, _ = await _brokered(make_server, private_redis)
    alice = await api.sign_up("outage")
    bob = await api.sign_up("outage")
    await asyncio.to_thread(private_redis.stop)

    refused = await sign_in(api, alice.login, alice.password)
    assert refused.codes == ["UNAVAILABLE"], refused
    assert "Rate limits cannot be checked" in refused.errors[0]["message"]
    # Volume limits allow: messages, sign-ups go on.
    sent = await send(api, alice, bob.login, "while the broker is down")
    assert sent["id"]
    await api.sign_up("outage")

    await asyncio.to_thread(private_redis.start)
    answer: Response | None = None
    for _ in range(WAIT * 10):
        answer = await sign_in(api, alice.login, alice.password)
        if answer.codes != ["UNAVAILABLE"]:
            break
        await asyncio.sleep(0.1)
    assert answer is not None and answer.codes == [], answer
    assert answer.result["signIn"]["user"] == {"login": alice.login}


async def test_persisted_queries_degrade_to_full_queries_while_the_broker_is_down(
    make_server: Any, private_redis: Broker
) -> None:
    api_a, _ = await _brokered(make_server, private_redis)
    api_b, _ = await _brokered(make_server, private_redis)
    before = 'query BeforeOutage { user(login: "nobody-apq-1") { login } }'
    status, result = await post(api_a, {"query": before, "extensions": persisted(before)})
    assert (status, result["data"]) == (200, {"user": None})
    status, result = await post(api_b, {"extensions": persisted(before)})
    assert (status, result["data"]) == (200, {"user": None}), "registered on A, known on B"

    await asyncio.to_thread(private_redis.stop)
    during = 'query DuringOutage { user(login: "nobody-apq-2") { login } }'
    status, result = await post(api_b, {"extensions": persisted(during)})
    assert codes(result) == ["PERSISTED_QUERY_NOT_FOUND"]
    status, result = await post(api_b, {"query": during, "extensions": persisted(during)})
    assert (status, result["data"]) == (200, {"user": None})
    status, result = await post(api_b, {"extensions": persisted(during)})
    assert (status, result["data"]) == (200, {"user": None}), "kept by the process that saw it"
    status, result = await post(api_b, {"extensions": persisted(before)})
    assert (status, result["data"]) == (200, {"user": None})
    await asyncio.to_thread(private_redis.start)


async def test_a_sign_out_during_a_broker_outage_still_closes_the_socket(
    make_server: Any, private_redis: Broker, base_settings: Settings
) -> None:
    """The revocation cannot travel: the process's watch looks its sessions up instead,
    and the socket closes with 4403 within one poll interval, without sending anything."""
    api, _ = await _brokered(make_server, private_redis)
    alice = await api.sign_up("pollout")
    async with Socket.open(api, TRANSPORT_WS) as socket:
        acked = await socket.init(alice.token)
        assert acked is not None and acked["type"] == "connection_ack"
        channel = f"{base_settings.keyspace}:{REVOCATIONS}"
        await wait_subscribers(private_redis.url, channel, 1)
        await asyncio.to_thread(private_redis.stop)
        try:
            assert (await api.ok("mutation { signOut }", token=alice.token))["signOut"] is True
            code = await asyncio.wait_for(socket.close_code(), BROKER_POLL_SECONDS + 5)
            assert code == 4403
        finally:
            await asyncio.to_thread(private_redis.start)


async def test_a_burst_beyond_the_broker_connections_waits_instead_of_failing_closed(
    make_server: Any, private_redis: Broker
) -> None:
    """200 sign-ins at once, each two limiter calls, over a pool of 64 connections:
    a busy broker is not a lost one, so none is refused as UNAVAILABLE."""
    api, _ = await _brokered(make_server, private_redis)
    burst = await asyncio.gather(*(sign_in(api, f"nobody-burst-{n}", "wrong") for n in range(200)))
    assert [r.codes for r in burst] == [["UNAUTHENTICATED"]] * 200
