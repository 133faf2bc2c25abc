"""A private Redis server for tests that stop it or count its clients (never the shared one)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from devnode.redis import RedisServer
from gateway.settings.tooling import ToolingSettings

WAIT = 30


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def redis_server(home: Path) -> Iterator[RedisServer]:
    """A Redis server of its own, on a free port, with its files in ``home``; stopped after."""
    own = ToolingSettings(cassandra_home=home, redis_port=free_port())
    server = RedisServer(own, progress=lambda _: None)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path) as server:
        yield server


async def subscribers(url: str, channel: str) -> int:
    """How many connections are subscribed to ``channel`` (one per gateway process)."""
    connection = aioredis.from_url(url)
    try:
        [(_, count)] = await connection.pubsub_numsub(channel)
        return int(count)
    finally:
        await connection.aclose()


async def wait_subscribers(url: str, channel: str, count: int) -> None:
    for _ in range(WAIT * 20):
        if await subscribers(url, channel) == count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"expected {count} processes subscribed to {channel}")
