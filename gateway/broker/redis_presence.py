"""The presence board in Redis: one sorted set per user, one member per process.

``presence:<login>`` (namespaced by keyspace) holds, for each process with a
socket of the user open, that process's id scored by when its claim expires.
A process refreshes the claims of all its users every ``refresh`` seconds, so
a user is online while any member's score is in the future; a process that
dies stops refreshing, and its claims lapse within ``ttl`` seconds, with no
cleanup job. The set itself expires ``ttl`` after its last refresh.

A user comes online when a process adds the first live member, and goes
offline when the last live member leaves; two processes racing at that edge
may both report it, which costs a duplicate event, never a wrong state.

When Redis cannot be reached, the board answers from this process's own
sockets, logs it, and writes again once Redis is back (the next refresh).
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
from collections.abc import Iterable
from datetime import UTC, datetime

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from gateway.tasks import cancel_and_wait

log = logging.getLogger(__name__)

#: Seconds a process's claim on a user lasts without a refresh: the bound on how long
#: a killed process's users still show online (``GATEWAY_PRESENCE_TTL_SECONDS``).
TTL = 30.0
#: Seconds between refreshes of a process's claims.
REFRESH = TTL / 3


class RedisPresenceBoard:
    def __init__(
        self, client: aioredis.Redis, *, namespace: str, ttl: float = TTL, refresh: float = REFRESH
    ) -> None:
        self.client = client
        self.prefix = f"{namespace}:presence:"
        self.ttl = ttl
        self.refresh = refresh
        self.process = os.urandom(8).hex()
        self._mine: set[str] = set()
        self._refresher: asyncio.Task[None] | None = None

    def _key(self, login: str) -> str:
        return self.prefix + login

    async def join(self, login: str) -> bool:
        self._mine.add(login)
        key, now = self._key(login), time.time()
        try:
            async with self.client.pipeline(transaction=True) as pipe:
                pipe.zremrangebyscore(key, "-inf", now)
                pipe.zcard(key)
                pipe.zadd(key, {self.process: now + self.ttl})
                pipe.expire(key, math.ceil(self.ttl) + 1)
                _, before, _, _ = await pipe.execute()
        except RedisError as exc:
            log.warning("presence of %s not shared (the broker is unreachable): %s", login, exc)
            return True
        return int(before) == 0

    async def leave(self, login: str) -> bool:
        self._mine.discard(login)
        key, now = self._key(login), time.time()
        try:
            async with self.client.pipeline(transaction=True) as pipe:
                pipe.zrem(key, self.process)
                pipe.zremrangebyscore(key, "-inf", now)
                pipe.zcard(key)
                _, _, left = await pipe.execute()
        except RedisError as exc:
            log.warning("presence of %s not shared (the broker is unreachable): %s", login, exc)
            return True
        return int(left) == 0

    async def online(self, logins: Iterable[str]) -> dict[str, datetime | None]:
        wanted = list(dict.fromkeys(logins))
        if not wanted:
            return {}
        now = time.time()
        try:
            async with self.client.pipeline(transaction=False) as pipe:
                for login in wanted:
                    pipe.zrangebyscore(self._key(login), now, "+inf", start=0, num=1, withscores=True)
                answers = await pipe.execute()
        except RedisError as exc:
            log.warning("presence read from this process only (the broker is unreachable): %s", exc)
            return {login: None for login in wanted if login in self._mine}
        found: dict[str, datetime | None] = {}
        for login, members in zip(wanted, answers, strict=True):
            if members:
                # The freshest claim was made ``ttl`` before it expires.
                _, expires = max(members, key=lambda member: member[1])
                found[login] = datetime.fromtimestamp(float(expires) - self.ttl, UTC)
        return found

    async def start(self) -> None:
        if self._refresher is None:
            self._refresher = asyncio.create_task(self._refresh())

    async def aclose(self) -> None:
        await cancel_and_wait(self._refresher, what="the presence refresher")
        self._refresher = None
        mine, self._mine = list(self._mine), set()
        try:
            async with self.client.pipeline(transaction=False) as pipe:
                for login in mine:
                    pipe.zrem(self._key(login), self.process)
                await pipe.execute()
        except RedisError:
            pass  # the claims lapse by themselves

    async def _refresh(self) -> None:
        while True:
            await asyncio.sleep(self.refresh)
            if not self._mine:
                continue
            expires = time.time() + self.ttl
            try:
                async with self.client.pipeline(transaction=False) as pipe:
                    for login in list(self._mine):
                        key = self._key(login)
                        pipe.zadd(key, {self.process: expires})
                        pipe.expire(key, math.ceil(self.ttl) + 1)
                    await pipe.execute()
            except RedisError as exc:
                log.warning("could not refresh %d presence claims: %s", len(self._mine), exc)
