"""Private brokers for tests that stop them or count their clients (never the shared Redis):
one Redis server, or a Redis Cluster of three masters; and what Redis says of a channel's
subscribers, on either."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Protocol

import pytest
import redis
import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode

from devnode.redis import LocalRedisCluster, RedisServer
from gateway.settings.tooling import ToolingSettings
from gateway.settings.values import cluster_url

WAIT = 30
#: The kinds of broker the multi-process tests run against.
BROKER_KINDS = ("redis", "cluster")


class Broker(Protocol):
    """What the tests do with a private broker, one server or a cluster alike."""

    @property
    def url(self) -> str: ...

    def start(self) -> None: ...

    def stop(self) -> None: ...


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _free_ports(count: int) -> list[int]:
    """``count`` distinct ports free now (each socket held until all are chosen)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


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


@contextlib.contextmanager
def redis_cluster(home: Path) -> Iterator[LocalRedisCluster]:
    """A Redis Cluster of three masters of its own, on free ports (clients and buses), with
    its files in ``home``; stopped after."""
    ports = _free_ports(6)
    cluster = LocalRedisCluster(
        ToolingSettings(cassandra_home=home),
        progress=lambda _: None,
        ports=list(zip(ports[:3], ports[3:], strict=True)),
        home=home / "cluster",
    )
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@contextlib.contextmanager
def private_broker(kind: str, home: Path) -> Iterator[Broker]:
    """A private broker of ``kind`` (one of :data:`BROKER_KINDS`)."""
    maker = redis_cluster if kind == "cluster" else redis_server
    with maker(home) as broker:
        yield broker


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[RedisServer]:
    with redis_server(tmp_path) as server:
        yield server


@contextlib.asynccontextmanager
async def connection(url: str) -> AsyncIterator[aioredis.Redis | aioredis.RedisCluster]:
    """A client of the broker at ``url``, one server or a cluster."""
    cluster = cluster_url(url)
    client: aioredis.Redis | aioredis.RedisCluster
    if cluster is None:
        client = aioredis.from_url(url)
    else:
        nodes = [ClusterNode(host, port) for host, port in cluster.nodes]
        client = aioredis.RedisCluster(startup_nodes=nodes, require_full_coverage=False)
    try:
        yield client
    finally:
        await client.aclose()


async def master_of(url: str, channel: str) -> str:
    """``host:port`` of the cluster master that serves ``channel``'s slot."""
    async with connection(url) as client:
        assert isinstance(client, aioredis.RedisCluster)
        await client.initialize()
        node = client.get_node_from_key(channel)
        assert node is not None
        return str(node.name)


async def subscribers(url: str, channel: str) -> int:
    """How many connections are subscribed to ``channel`` (one per gateway process): on one
    Redis by ``PUBSUB NUMSUB``; on a cluster by ``PUBSUB SHARDNUMSUB``, asked of every master
    that answers (only the slot's master has any, and a stopped one has none)."""
    cluster = cluster_url(url)
    if cluster is None:
        async with connection(url) as client:
            [(_, count)] = await client.pubsub_numsub(channel)
            return int(count)
    total = 0
    for host, port in cluster.nodes:
        node = aioredis.Redis(host=host, port=port, socket_connect_timeout=1.0)
        try:
            [(_, count)] = await node.pubsub_shardnumsub(channel)
            total += int(count)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            pass
        finally:
            await node.aclose()
    return total


async def wait_subscribers(url: str, channel: str, count: int) -> None:
    for _ in range(WAIT * 20):
        if await subscribers(url, channel) == count:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"expected {count} processes subscribed to {channel}")
