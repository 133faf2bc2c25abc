"""Redis clients for the broker: bounded pools that wait for a free connection.

redis-py's default pool raises at once when all its connections are busy, so a
burst of concurrent requests would look like a lost broker (dropped events,
refused sign-ins). A blocking pool makes a burst wait, at most ``timeout``.
Retrying belongs to the callers (the PubSub reconnects, the limiter decides per
limit), so a client retries at most ``retries`` times, without back-off: once is
enough to replace a pooled connection that a broker restart closed.

A ``redis+cluster://`` URL gives redis-py's cluster client instead
(:class:`BoundedCluster`): every key is routed to the master of its slot, so each
piece of state the broker keeps (a presence key, a rate-limit bucket, a persisted
query) lives on one shard, and a lost master fails only the keys of its slots.
Its per-node pools raise when full rather than wait, so the client bounds its
calls in flight itself, and a burst waits as it does on one Redis.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable
from contextvars import ContextVar
from typing import Any

import redis.asyncio as aioredis
from redis.asyncio.cluster import ClusterNode, ClusterPipeline
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisClusterException

from gateway.settings.values import ClusterUrl, cluster_url
from gateway.tasks import finish_within

#: A client of the broker: one Redis, or a Redis Cluster.
BrokerClient = aioredis.Redis | aioredis.RedisCluster

#: Seconds a client or subscriber connection may take to close.
CLOSE_TIMEOUT = 2.0


async def close_within(closing: Awaitable[object], what: str) -> None:
    """Await a redis-py ``aclose()`` for at most ``CLOSE_TIMEOUT`` seconds, errors ignored.

    Closing a connection can wait for its socket to be closed, which a broker restart
    can leave waiting (redis/redis-py#3941): a gateway shutting down, or a subscriber
    reconnecting, must not wait with it."""
    await finish_within(closing, CLOSE_TIMEOUT, f"closing {what}")


#: Set while a task holds one of a :class:`BoundedCluster`'s calls: a pipeline that sends a
#: redirected command again from inside its call does not wait for a second one.
_HOLDING: ContextVar[bool] = ContextVar("broker_call_held", default=False)


class BoundedCluster(aioredis.RedisCluster):
    """redis-py's cluster client with at most ``limit`` calls (commands, pipelines) in flight;
    a call beyond them waits up to ``wait`` seconds for one to finish. Each call uses at most
    one connection of each node, so no node's pool of ``limit`` connections ever runs out."""

    def __init__(self, *, limit: int, wait: float, **kwargs: Any) -> None:
        super().__init__(max_connections=limit, **kwargs)
        self._bound = asyncio.Semaphore(limit)
        self._wait = wait

    @contextlib.asynccontextmanager
    async def bounded(self) -> AsyncIterator[None]:
        """One call's turn: waits for a free one, or raises ``ConnectionError`` after ``wait``."""
        if _HOLDING.get():
            yield
            return
        try:
            async with asyncio.timeout(self._wait):
                await self._bound.acquire()
        except TimeoutError as exc:
            raise RedisConnectionError(f"no broker connection free within {self._wait:g}s") from exc
        token = _HOLDING.set(True)
        try:
            yield
        finally:
            _HOLDING.reset(token)
            self._bound.release()

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        async with self.bounded(), _as_redis_errors():
            return await super().execute_command(*args, **kwargs)

    def pipeline(self, transaction: Any | None = None, shard_hint: Any | None = None) -> ClusterPipeline:
        if shard_hint:
            return super().pipeline(transaction, shard_hint)
        return _BoundedPipeline(self, transaction)  # type: ignore[abstract]  # redis 8.1: as its own pipeline()


class _BoundedPipeline(ClusterPipeline):
    def __init__(self, client: BoundedCluster, transaction: Any | None) -> None:
        super().__init__(client, transaction)
        self._bounded = client

    async def execute(self, raise_on_error: bool = True, allow_redirections: bool = True) -> list[Any]:
        async with self._bounded.bounded(), _as_redis_errors():
            return await super().execute(raise_on_error, allow_redirections)


@contextlib.asynccontextmanager
async def _as_redis_errors() -> AsyncIterator[None]:
    """The cluster client's own failures (no master reachable, a slot no master serves) are
    not ``RedisError``s; its callers handle a lost broker as one, so they become one. So does
    a write on a connection torn down under it, which redis-py 8.1 leaks as the transport's
    ``AttributeError``/``TypeError`` on ``None`` (redis/redis-py#4287). redis-py 8.1 tears
    connections down under their callers after any connection error or timeout on a node:
    ``ClusterNode.disconnect_free_connections`` awaits each free connection's disconnect
    while it stays in the free list, so a concurrent call can take it half closed. One
    timeout in a burst can so fail a few calls beside it; they count as a lost broker."""
    try:
        yield
    except RedisClusterException as exc:
        raise RedisConnectionError(f"Redis Cluster: {exc}") from exc
    except (AttributeError, TypeError) as exc:
        if "NoneType" not in str(exc):
            raise
        raise RedisConnectionError(f"connection lost while in use ({exc})") from exc


def cluster_client(
    cluster: ClusterUrl,
    *,
    max_connections: int,
    timeout: float,
    retries: int = 0,
    read_timeout: float | None = None,
    pool_timeout: float | None = None,
) -> BoundedCluster:
    """The cluster client of a ``redis+cluster://`` URL, discovering the cluster from any of its
    nodes. Slots that no master serves (one is down) fail their keys only; a connection error
    makes the client read the slots map again before its next call."""
    return BoundedCluster(
        limit=max_connections,
        wait=timeout if pool_timeout is None else pool_timeout,
        startup_nodes=[ClusterNode(host, port) for host, port in cluster.nodes],
        require_full_coverage=False,
        retry=Retry(NoBackoff(), retries),
        username=cluster.username,
        password=cluster.password,
        ssl=cluster.tls,
        socket_connect_timeout=timeout,
        socket_timeout=read_timeout,
        socket_keepalive=True,
    )


def redis_client(
    url: str,
    *,
    max_connections: int,
    timeout: float,
    retries: int = 0,
    read_timeout: float | None = None,
    pool_timeout: float | None = None,
) -> BrokerClient:
    """``timeout`` bounds connecting, ``read_timeout`` each answer (None for a subscriber,
    which waits for messages), ``pool_timeout`` the wait for a free connection
    (``timeout`` unless given: a busy broker is not a lost one). A ``redis+cluster://`` URL
    gives a :class:`BoundedCluster`."""
    cluster = cluster_url(url)
    if cluster is not None:
        return cluster_client(
            cluster,
            max_connections=max_connections,
            timeout=timeout,
            retries=retries,
            read_timeout=read_timeout,
            pool_timeout=pool_timeout,
        )
    return node_client(
        url,
        max_connections=max_connections,
        timeout=timeout,
        retries=retries,
        read_timeout=read_timeout,
        pool_timeout=pool_timeout,
    )


def node_client(
    url: str,
    *,
    max_connections: int,
    timeout: float,
    retries: int = 0,
    read_timeout: float | None = None,
    pool_timeout: float | None = None,
) -> aioredis.Redis:
    """A client of one Redis server (a standalone broker, or one master of a cluster)."""
    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=max_connections,
        timeout=timeout if pool_timeout is None else pool_timeout,
        retry=Retry(NoBackoff(), retries),
        socket_connect_timeout=timeout,
        socket_timeout=read_timeout,
        socket_keepalive=True,
    )
    return aioredis.Redis.from_pool(pool)
