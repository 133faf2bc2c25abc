"""The local Redis server, started through the code path of ``gateway redis start``, serves real clients.

The shared instance (GATEWAY_REDIS_PORT) is started or reused and never stopped here; stop and
start are exercised on a second instance on another port, with its files in a temporary home.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest
import redis.asyncio as aioredis

from devnode.common import pid_alive, port_open
from devnode.redis import LocalRedisCluster, RedisServer
from devnode.redis.cluster import cluster_info
from gateway.settings import Settings
from gateway.settings.tooling import ToolingSettings
from tests.support.cli import run_cli
from tests.support.redis_helpers import connection, redis_cluster


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def shared_redis(tooling: ToolingSettings) -> RedisServer:
    server = RedisServer(tooling, progress=lambda _: None)
    server.start()
    return server


@pytest.fixture
async def client(shared_redis: RedisServer) -> AsyncIterator[aioredis.Redis]:
    connection = aioredis.from_url(shared_redis.url)
    yield connection
    await connection.aclose()


async def test_set_and_get(client: aioredis.Redis) -> None:
    key = f"test:{uuid.uuid4().hex}"
    assert await client.get(key) is None
    assert await client.set(key, "value", ex=60)
    assert await client.get(key) == b"value"
    assert await client.delete(key) == 1


async def test_publish_reaches_a_subscriber(client: aioredis.Redis) -> None:
    channel = f"test:{uuid.uuid4().hex}"
    subscriber = client.pubsub()
    await subscriber.subscribe(channel)
    confirmed = await subscriber.get_message(timeout=5)
    assert confirmed is not None and confirmed["type"] == "subscribe"

    assert await client.publish(channel, "hello") == 1
    message = await subscriber.get_message(ignore_subscribe_messages=True, timeout=5)
    assert message is not None
    assert (message["channel"], message["data"]) == (channel.encode(), b"hello")
    await subscriber.aclose()


async def test_cli_status_reports_the_shared_server(
    base_settings: Settings, shared_redis: RedisServer
) -> None:
    status = shared_redis.status()
    code, out = await run_cli(base_settings, "redis", "status")
    assert code == 0, out
    assert f"running (pid {status.pid}), answers PING" in out


async def test_second_instance_starts_is_reused_and_stops(tooling: ToolingSettings, tmp_path: Path) -> None:
    settings = replace(tooling, cassandra_home=tmp_path, redis_port=_free_port())
    lines: list[str] = []
    server = RedisServer(settings, progress=lines.append)
    # A pid file naming a live process that is not this server's redis-server is ignored.
    server.home.mkdir(parents=True)
    (server.home / "redis.pid").write_text("1\n")
    assert not server.status().running

    server.start()
    status = server.status()
    assert status.running and status.ping and status.pid is not None
    assert any(line.startswith("starting Redis") for line in lines)

    again = RedisServer(settings, progress=lines.append)
    again.start()
    assert lines[-1] == f"Redis already running (pid {status.pid}, on 127.0.0.1:{settings.redis_port})"
    assert again.status().pid == status.pid

    connection = aioredis.from_url(server.url)
    assert await connection.ping()
    await connection.aclose()

    server.stop()
    assert not pid_alive(status.pid)
    assert not port_open(settings.redis_port)
    stopped = server.status()
    assert (stopped.running, stopped.ping, stopped.pid) == (False, False, None)
    assert not (server.home / "redis.pid").exists()

    server.stop()
    assert lines[-1] == f"Redis is not running (home {server.home})"


async def test_cli_status_of_a_stopped_server_exits_3(base_settings: Settings, tmp_path: Path) -> None:
    port = _free_port()
    env = {"GATEWAY_CASSANDRA_HOME": str(tmp_path), "GATEWAY_REDIS_PORT": str(port)}
    code, out = await run_cli(base_settings, "redis", "status", env=env)
    assert code == 3, out
    assert f"Redis on redis://127.0.0.1:{port}/0: stopped; home {tmp_path / f'redis-{port}'}" in out


async def test_a_local_cluster_forms_once_is_reused_and_a_master_stops_and_rejoins(tmp_path: Path) -> None:
    """Three masters, formed with redis-cli; started again, the cluster is reused (not formed
    twice); a master stopped and started again serves its slots again (its nodes.conf kept)."""
    with redis_cluster(tmp_path) as cluster:
        status = cluster.status()
        assert status.ok and [node.running for node in status.nodes] == [True] * 3
        lines: list[str] = []
        own = ToolingSettings(cassandra_home=tmp_path)
        again = LocalRedisCluster(own, progress=lines.append, ports=_ports(cluster), home=cluster.home)
        again.start()
        assert not any(line.startswith("forming") for line in lines), lines
        slots = cluster_info(cluster.ports[1])
        assert slots is not None and slots["cluster_slots_assigned"] == "16384"

        cluster.stop(2)
        stopped = cluster.status()
        assert [node.running for node in stopped.nodes] == [True, False, True]
        assert stopped.states[1] is None
        cluster.start_node(2)
        assert cluster.status().ok
        async with connection(cluster.url) as client:
            await client.set("devnode-cluster", "yes")
            assert await client.get("devnode-cluster") == b"yes"


async def test_cli_status_of_a_stopped_cluster_exits_3_and_node_needs_cluster(
    base_settings: Settings, tmp_path: Path
) -> None:
    env = {"GATEWAY_CASSANDRA_HOME": str(tmp_path), "GATEWAY_REDIS_CLUSTER_PORT": "7400"}
    code, out = await run_cli(base_settings, "redis", "status", "--cluster", env=env)
    assert code == 3, out
    assert "master 2 on 127.0.0.1:7401: stopped" in out
    assert "GATEWAY_BROKER_URL=redis+cluster://127.0.0.1:7400,127.0.0.1:7401,127.0.0.1:7402" in out
    code, out = await run_cli(base_settings, "redis", "stop", "--node", "2", env=env)
    assert code != 0 and "--node needs --cluster" in out, out
    code, out = await run_cli(base_settings, "redis", "stop", "--cluster", "--node", "4", env=env)
    assert code != 0 and "--node must be 1 to 3, got 4" in out, out


def _ports(cluster: LocalRedisCluster) -> list[tuple[int, int]]:
    return [(master.port, master.cluster_port or 0) for master in cluster.masters]
