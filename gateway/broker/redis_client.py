"""Redis clients for the broker: bounded pools that wait for a free connection.

redis-py's default pool raises at once when all its connections are busy, so a
burst of concurrent requests would look like a lost broker (dropped events,
refused sign-ins). A blocking pool makes a burst wait, at most ``timeout``.
Retrying belongs to the callers (the PubSub reconnects, the limiter decides per
limit), so a client retries at most ``retries`` times, without back-off: once is
enough to replace a pooled connection that a broker restart closed.
"""

from __future__ import annotations

from collections.abc import Awaitable

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from gateway.tasks import finish_within

#: Seconds a client or subscriber connection may take to close.
CLOSE_TIMEOUT = 2.0


async def close_within(closing: Awaitable[object], what: str) -> None:
    """Await a redis-py ``aclose()`` for at most ``CLOSE_TIMEOUT`` seconds, errors ignored.

    Closing a connection can wait for its socket to be closed, which a broker restart
    can leave waiting (redis/redis-py#3941): a gateway shutting down, or a subscriber
    reconnecting, must not wait with it."""
    await finish_within(closing, CLOSE_TIMEOUT, f"closing {what}")


def redis_client(
    url: str,
    *,
    max_connections: int,
    timeout: float,
    retries: int = 0,
    read_timeout: float | None = None,
    pool_timeout: float | None = None,
) -> aioredis.Redis:
    """``timeout`` bounds connecting, ``read_timeout`` each answer (None for a subscriber,
    which waits for messages), ``pool_timeout`` the wait for a free connection
    (``timeout`` unless given: a busy broker is not a lost one)."""
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
