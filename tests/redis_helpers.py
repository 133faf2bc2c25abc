"""A private Redis server for tests that stop it or count its clients (never the shared one)."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from devnode.redis import RedisServer
from gateway.settings import Settings

WAIT = 30


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def private_redis(base_settings: Settings, tmp_path: Path) -> Iterator[RedisServer]:
    settings = replace(base_settings, cassandra_home=tmp_path, redis_port=free_port())
    server = RedisServer(settings, progress=lambda _: None)
    server.start()
    yield server
    server.stop()


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
