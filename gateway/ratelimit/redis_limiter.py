"""The :class:`~gateway.ratelimit.limiter.RateLimiter` over the Redis broker, shared by every process.

Each call is one Lua script, so a read-modify-write of a bucket is atomic across
processes. Time is the server's (``redis.call('TIME')``): the processes' clocks
never meet, so a skewed host cannot refill a bucket early. Every key expires once
its state would be no state at all (a full bucket, failures forgotten), so idle
buckets vanish on their own. Keys are ``<namespace>:rate:<rule>:<key>``, the
namespace being the keyspace, as for the broker's channels.

On a Redis Cluster each bucket is one key, so each script runs on the master of
that key's slot. There the scripts are sent whole (``EVAL``) rather than by their
hash: redis-py 8.1's cluster client, loading a script into every master after a
``NOSCRIPT`` answer while other calls are in flight, tears down connections under
them (a burst of sign-ins after a master's restart would fail). Redis caches a
script it was sent, so this costs only the script's bytes.

When Redis cannot be reached (or does not answer within ``timeout``), calls raise
:class:`LimiterUnavailable`; the policy decides per limit whether that refuses or
allows (``policy.py``). After a failure Redis is not asked again for ``retry_after``
seconds, so a dead broker costs one timeout per interval, not one per request.
"""

from __future__ import annotations

import logging
import math
import time
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from gateway.ratelimit.limiter import FORGET_AFTER, Backoff, Decision, LimiterUnavailable
from gateway.settings.values import Rule

log = logging.getLogger(__name__)

#: KEYS[1] the bucket; ARGV capacity, refill per second, cost. Returns {allowed, retry_after}.
_TAKE = """
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) + tonumber(now_parts[2]) / 1000000
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local tokens = capacity
local state = redis.call('HMGET', KEYS[1], 't', 's')
if state[1] then
  tokens = math.min(capacity, tonumber(state[1]) + math.max(0, now - tonumber(state[2])) * rate)
end
local needed = math.max(cost, 1)
local allowed = tokens >= needed
local wait = 0
if allowed then
  tokens = tokens - cost
else
  wait = math.max(0, math.min(needed, capacity) - tokens) / rate
end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 's', string.format('%.6f', now))
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) / rate * 1000) + 1000)
return {allowed and 1 or 0, tostring(wait)}
"""

#: KEYS[1] the failures; ARGV free, base, ceiling, forget after. Returns {allowed, retry_after}.
_ATTEMPT = """
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) + tonumber(now_parts[2]) / 1000000
local free = tonumber(ARGV[1])
local base = tonumber(ARGV[2])
local ceiling = tonumber(ARGV[3])
local forget = tonumber(ARGV[4])
local failures = 0
local state = redis.call('HMGET', KEYS[1], 'f', 'l')
if state[1] and now - tonumber(state[2]) <= forget then
  failures = tonumber(state[1])
  local delay = 0
  if failures >= free then
    delay = math.min(ceiling, base * 2 ^ math.min(failures - free, 62))
  end
  local wait = tonumber(state[2]) + delay - now
  if wait > 0 then
    return {0, tostring(wait)}
  end
end
redis.call('HSET', KEYS[1], 'f', failures + 1, 'l', string.format('%.6f', now))
redis.call('PEXPIRE', KEYS[1], math.ceil(forget * 1000))
return {1, '0'}
"""


class _Sent:
    """A script sent whole with every call (``EVAL``), called like redis-py's ``Script``."""

    def __init__(self, client: aioredis.RedisCluster, script: str) -> None:
        self._client = client
        self._script = script

    def __call__(self, keys: list[str], args: list[Any]) -> Any:
        return self._client.eval(self._script, len(keys), *keys, *args)


class RedisRateLimiter:
    def __init__(
        self,
        client: aioredis.Redis | aioredis.RedisCluster,
        *,
        namespace: str,
        retry_after: float = 1.0,
        forget_after: float = FORGET_AFTER,
    ) -> None:
        self._client = client
        self._prefix = f"{namespace}:rate:"
        self._retry_after = retry_after
        self._forget_after = forget_after
        self._take: Any
        self._attempt: Any
        if isinstance(client, aioredis.RedisCluster):
            self._take, self._attempt = _Sent(client, _TAKE), _Sent(client, _ATTEMPT)
        else:
            self._take, self._attempt = client.register_script(_TAKE), client.register_script(_ATTEMPT)
        self._down_until = 0.0

    async def _run(self, script: Any, key: str, *args: float | int) -> Decision:
        answer = await self._call(script(keys=[self._prefix + key], args=list(args)))
        allowed, wait = answer
        return Decision(bool(int(allowed)), float(wait))

    async def _call(self, pending: Any) -> Any:
        if time.monotonic() < self._down_until:
            pending.close()
            raise LimiterUnavailable()
        try:
            result = await pending
        except (RedisError, OSError, TimeoutError) as exc:
            if self._down_until == 0.0:
                log.warning("rate limits: broker unreachable (%s)", exc)
            self._down_until = time.monotonic() + self._retry_after
            raise LimiterUnavailable() from exc
        if self._down_until:
            log.info("rate limits: broker reachable again")
            self._down_until = 0.0
        return result

    async def take(self, key: str, rule: Rule, cost: int = 1) -> Decision:
        return await self._run(self._take, f"{rule.name}:{key}", rule.capacity, rule.refill_per_second, cost)

    async def attempt(self, key: str, backoff: Backoff) -> Decision:
        return await self._run(
            self._attempt,
            f"{backoff.name}:{key}",
            backoff.free,
            backoff.base,
            backoff.ceiling,
            self._forget_after,
        )

    async def forgive(self, key: str, backoff: Backoff) -> None:
        await self._call(self._client.delete(f"{self._prefix}{backoff.name}:{key}"))

    async def mark(self, key: str, seconds: float) -> None:
        await self._call(self._client.set(self._prefix + key, b"1", px=max(1, math.ceil(seconds * 1000))))

    async def marked(self, key: str) -> bool:
        return bool(await self._call(self._client.exists(self._prefix + key)))
