"""The process's session cache, through the real client: an authenticated request reads no
``sessions`` row while its session is known to the process, ``signOut`` and expiry refuse
the token at once, and while the broker's revocations channel is not listened to every
request reads its session again (``gateway/users/session_cache.py``).

Statement counts come from ``extensions.cql``: ``{ me { id } }`` needs nothing but the
viewer, so it spends one statement when the session is read and none when it is known.
"""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from typing import Any

from aiohttp import web

from devnode.redis import RedisServer
from gateway.broker.redis_pubsub import RedisPubSub
from gateway.broker.sessions import REVOCATIONS
from gateway.http.session_watch import SessionWatch
from gateway.server.app import SERVICES
from gateway.settings import Settings
from gateway.users.session_cache import SessionCache
from tests.support.client import Api, Response
from tests.support.redis_helpers import WAIT, private_redis, wait_subscribers

__all__ = ["private_redis"]

ME = "{ me { id } }"
SIGN_UP = """mutation($input: SignUpInput!) { signUp(input: $input) { token expiresAt user { login } } }"""


async def me(api: Api, token: str) -> Response:
    return await api.call(ME, token=token)


async def test_a_session_created_here_is_known_to_the_process(api: Api) -> None:
    alice = await api.sign_up("cached")
    for _ in range(2):
        response = await me(api, alice.token)
        assert response.result["me"]["id"]
        assert response.statements == 0


async def test_the_first_lookup_on_another_process_reads_the_session_and_the_next_do_not(
    api: Api, make_server: Any
) -> None:
    alice = await api.sign_up("looked")
    other, _ = await make_server()
    first = await me(other, alice.token)
    assert first.result["me"]["id"]
    assert first.statements == 1
    for _ in range(2):
        again = await me(other, alice.token)
        assert again.result["me"]["id"]
        assert again.statements == 0


async def test_sign_out_refuses_the_token_on_the_very_next_request(api: Api) -> None:
    alice = await api.sign_up("outgoing")
    assert (await me(api, alice.token)).statements == 0
    assert (await api.ok("mutation { signOut }", token=alice.token))["signOut"] is True
    refused = await me(api, alice.token)
    assert refused.codes == ["UNAUTHENTICATED"]
    assert refused.statements == 1


async def test_an_expired_session_is_refused_at_once(base_settings: Settings, make_server: Any) -> None:
    """The cache keeps the session, and still refuses it from the second it expires on."""
    short, _ = await make_server(session_ttl_days=3 / 86400)
    login = f"exp{time.time_ns() % 10**9}"
    data = await short.ok(
        SIGN_UP,
        {
            "input": {
                "login": login,
                "password": "correct-horse",
                "firstname": "E",
                "lastname": "X",
                "email": f"{login}@example.com",
                "bio": "",
            }
        },
    )
    token = data["signUp"]["token"]
    expires = datetime.fromisoformat(data["signUp"]["expiresAt"]).timestamp()
    if time.time() < expires:
        live = await me(short, token)
        if time.time() < expires:  # answered before the expiry: from the cache
            assert live.statements == 0
    await asyncio.sleep(max(0.0, expires - time.time()) + 0.1)  # wait for the boundary
    assert time.time() > expires
    refused = await me(short, token)
    assert refused.codes == ["UNAUTHENTICATED"]
    assert refused.statements == 0


async def test_a_kept_session_is_read_again_once_it_is_older_than_the_bound(
    api: Api, make_server: Any
) -> None:
    """``GATEWAY_SESSION_CACHE_SECONDS`` bounds how long a revocation the broker lost could
    go unseen: past it, the session is read from Cassandra again (and kept anew)."""
    alice = await api.sign_up("aged")
    short, _ = await make_server(session_cache_seconds=0.5)
    assert (await me(short, alice.token)).statements == 1
    kept = time.monotonic()  # the session was kept before this
    await asyncio.sleep(0.6)  # wait for the boundary
    assert time.monotonic() > kept + 0.5
    assert (await me(short, alice.token)).statements == 1


def _watch(app: web.Application) -> SessionWatch:
    return app[SERVICES].provided(SessionWatch)


async def _listening(app: web.Application, on: bool) -> None:
    watch = _watch(app)
    for _ in range(WAIT * 20):
        if watch.listening.is_set() == on:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"the revocations listener never became {'on' if on else 'off'}")


async def test_the_cache_is_not_trusted_while_the_broker_is_lost(
    api: Api, make_server: Any, private_redis: RedisServer, base_settings: Settings
) -> None:
    """A revocation may be missed while the broker is away: every request reads its
    session until the listener is back on the channel, and what was kept before is gone."""
    brokered, app = await make_server(broker_url=private_redis.url)
    pubsub = app[SERVICES].pubsub
    assert isinstance(pubsub, RedisPubSub)
    await asyncio.wait_for(pubsub.connected(), WAIT)
    await _listening(app, True)
    await wait_subscribers(private_redis.url, f"{base_settings.keyspace}:{REVOCATIONS}", 1)
    alice = await api.sign_up("brokerless")
    assert (await me(brokered, alice.token)).statements == 1
    assert (await me(brokered, alice.token)).statements == 0

    private_redis.stop()
    await _listening(app, False)
    cache = app[SERVICES].provided(SessionCache)
    assert len(cache) == 0 and not cache.trusted
    for _ in range(2):
        response = await me(brokered, alice.token)
        assert response.result["me"]["id"]
        assert response.statements == 1

    private_redis.start()
    await _listening(app, True)
    assert (await me(brokered, alice.token)).statements == 1
    assert (await me(brokered, alice.token)).statements == 0


async def test_without_a_reachable_broker_every_request_reads_its_session(
    api: Api, make_server: Any, private_redis: RedisServer
) -> None:
    private_redis.stop()
    unreachable, app = await make_server(broker_url=private_redis.url)
    alice = await api.sign_up("neverheard")
    assert not _watch(app).listening.is_set()
    for _ in range(2):
        assert (await me(unreachable, alice.token)).statements == 1
