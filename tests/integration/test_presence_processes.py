"""Presence across gateway processes sharing one Redis: a socket on one process is seen
online by a subscriber on another, a close is seen as offline with the time, and the
users of a process killed with SIGKILL go offline by themselves once its claims lapse.

The processes run with ``GATEWAY_PRESENCE_TTL_SECONDS=3`` (claims renewed every second),
so the killed-process test waits seconds, not the default half minute. Every test runs against
one Redis server and against a Redis Cluster of three masters."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gateway.settings import Settings
from gateway.users.presence import presence_channel
from tests.support.messenger import send
from tests.support.presence import CHANGED, next_event, online, presence_of
from tests.support.processes import Gateway, start_gateway
from tests.support.redis_helpers import BROKER_KINDS, WAIT, Broker, private_broker, wait_subscribers
from tests.support.ws_protocol import TRANSPORT_WS, Socket

TTL = 3.0


@pytest.fixture(scope="module", params=BROKER_KINDS)
def broker(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    with private_broker(request.param, tmp_path_factory.mktemp(request.param)) as server:
        yield server


def _env(settings: Settings, broker: Broker) -> dict[str, str]:
    return {
        **settings.rate_variables(),
        "GATEWAY_BROKER_URL": broker.url,
        "GATEWAY_PRESENCE_TTL_SECONDS": str(TTL),
    }


@pytest.fixture(scope="module")
async def pair(
    base_settings: Settings, broker: Broker, server: Any, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[tuple[Gateway, Gateway]]:
    logs = tmp_path_factory.mktemp("presence-gateways")
    env = _env(base_settings, broker)
    a, b = await asyncio.gather(*(start_gateway(base_settings, logs, **env) for _ in range(2)))
    yield a, b
    codes = await asyncio.gather(a.stop(), b.stop())
    assert list(codes) == [0, 0], [a.output(), b.output()]


async def test_a_socket_on_a_is_seen_online_on_b_then_offline_with_the_time(
    pair: tuple[Gateway, Gateway], broker: Broker, base_settings: Settings
) -> None:
    a, b = pair
    alice = await a.api.sign_up("xpres")
    bob = await a.api.sign_up("xpres")
    await send(a.api, alice, bob.login, "hi")
    async with online(b.api, bob) as watcher:
        await watcher.start(CHANGED, {"l": [alice.login]})
        assert (await next_event(watcher))["presence"] == {"online": False, "lastSeenAt": None}
        await wait_subscribers(broker.url, f"{base_settings.keyspace}:{presence_channel(alice.login)}", 1)
        opened = time.monotonic()
        async with online(a.api, alice):
            came = await asyncio.wait_for(next_event(watcher), WAIT)
            print(f"online on A seen on B after {time.monotonic() - opened:.3f} s (socket open to event)")
            assert came == {"user": {"login": alice.login}, "presence": {"online": True, "lastSeenAt": None}}
            # B answers queries from the same board.
            assert await presence_of(b.api, bob, alice.login) == {"online": True, "lastSeenAt": None}
            # DateTime carries milliseconds: compare at that precision.
            now = datetime.now(UTC)
            closing = now.replace(microsecond=now.microsecond // 1000 * 1000)
            closed = time.monotonic()
        went = await asyncio.wait_for(next_event(watcher), WAIT)
        print(f"offline on A seen on B after {time.monotonic() - closed:.3f} s")
        assert went["presence"]["online"] is False
        assert closing <= datetime.fromisoformat(went["presence"]["lastSeenAt"]) <= datetime.now(UTC)
        assert await presence_of(b.api, bob, alice.login) == went["presence"]


async def test_sockets_on_both_processes_keep_the_user_online_until_the_last_closes(
    pair: tuple[Gateway, Gateway],
) -> None:
    a, b = pair
    alice = await a.api.sign_up("xpres")
    bob = await a.api.sign_up("xpres")
    await send(a.api, alice, bob.login, "hi")
    async with online(a.api, alice):
        async with online(b.api, alice):
            pass
        # B's only socket closed; A's still stands for her, on A and on B.
        await asyncio.sleep(0.3)
        for gateway in pair:
            assert (await presence_of(gateway.api, bob, alice.login) or {})["online"] is True


async def test_the_users_of_a_killed_process_go_offline_within_the_bound(
    pair: tuple[Gateway, Gateway],
    broker: Broker,
    base_settings: Settings,
    tmp_path: Path,
) -> None:
    a, b = pair
    doomed = await start_gateway(base_settings, tmp_path, **_env(base_settings, broker))
    alice = await a.api.sign_up("xpres")
    bob = await a.api.sign_up("xpres")
    await send(a.api, alice, bob.login, "hi")
    try:
        async with online(b.api, bob) as watcher, Socket.open(doomed.api, TRANSPORT_WS) as on_doomed:
            acked = await on_doomed.init(alice.token)
            assert acked is not None and acked["type"] == "connection_ack"
            await watcher.start(CHANGED, {"l": [alice.login]})
            first = await next_event(watcher)
            if not first["presence"]["online"]:
                first = await asyncio.wait_for(next_event(watcher), WAIT)
            assert first["presence"] == {"online": True, "lastSeenAt": None}

            assert await doomed.stop(signal.SIGKILL) == -signal.SIGKILL
            killed = datetime.now(UTC)
            died = time.monotonic()
            went = await asyncio.wait_for(next_event(watcher), WAIT)
            print(f"SIGKILLed process's user offline after {time.monotonic() - died:.3f} s (TTL {TTL} s)")
    finally:
        if doomed.process.returncode is None:
            await doomed.stop(signal.SIGKILL)
    assert went["user"] == {"login": alice.login} and went["presence"]["online"] is False
    # Last seen when the dead process last renewed its claim: before it died, within the bound.
    last_seen = datetime.fromisoformat(went["presence"]["lastSeenAt"])
    assert killed - timedelta(seconds=2 * TTL) <= last_seen <= killed
    # Stored, so a process that never watched her tells the same.
    assert await presence_of(a.api, bob, alice.login) == went["presence"]
