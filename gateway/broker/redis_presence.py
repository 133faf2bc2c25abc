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
sockets, logs it, and writes again once Redis is back (the next refresh). On a
Redis Cluster each user's key lives on the master of its slot, every write touches
that one key (a transaction on one slot), and reads and refreshes go to each master
apart: a lost master costs the users whose keys it holds (answered from this
process's sockets, as above), never the others.

``claims_listener`` is told how many users this process claims, at every change.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisClusterException, RedisError

from gateway.broker.redis_client import BrokerClient
from gateway.tasks import cancel_and_wait

log = logging.getLogger(__name__)

#: Seconds a process's claim on a user lasts without a refresh: the bound on how long
#: a killed process's users still show online (``GATEWAY_PRESENCE_TTL_SECONDS``).
TTL = 30.0
#: Seconds between refreshes of a process's claims.
REFRESH = TTL / 3


class RedisPresenceBoard:
    def __init__(
        self, client: BrokerClient, *, namespace: str, ttl: float = TTL, refresh: float = REFRESH
    ) -> None:
        self.client = client
        self.prefix = f"{namespace}:presence:"
        self.ttl = ttl
        self.refresh = refresh
        self.process = os.urandom(8).hex()
        self._mine: set[str] = set()
        self._refresher: asyncio.Task[None] | None = None
        self.claims_listener: Callable[[int], None] | None = None

    def _key(self, login: str) -> str:
        return self.prefix + login

    def _claimed(self) -> None:
        if self.claims_listener is not None:
            self.claims_listener(len(self._mine))

    def _by_shard(self, logins: Sequence[str]) -> list[list[str]]:
        """``logins`` grouped by the master holding their keys (one group on one Redis)."""
        if not isinstance(self.client, aioredis.RedisCluster):
            return [list(logins)]
        groups: dict[str, list[str]] = {}
        for login in logins:
            try:
                node = self.client.get_node_from_key(self._key(login))
                name = "" if node is None else node.name
            except RedisClusterException:
                name = ""
            groups.setdefault(name, []).append(login)
        return list(groups.values())

    async def _each_shard(
        self, logins: Sequence[str], commands: Callable[[Any, str], None]
    ) -> list[tuple[list[str], list[Any] | BaseException]]:
        """One pipeline per shard, concurrently: each group with its answers, or its error."""
        groups = self._by_shard(logins)

        async def run(group: list[str]) -> list[Any]:
            async with self.client.pipeline(transaction=False) as pipe:
                for login in group:
                    commands(pipe, login)
                return list(await pipe.execute())

        answers = await asyncio.gather(*(run(group) for group in groups), return_exceptions=True)
        for answer in answers:
            if isinstance(answer, BaseException) and not isinstance(
                answer, RedisError | RedisClusterException | OSError | TimeoutError
            ):
                raise answer
        return list(zip(groups, answers, strict=True))

    async def join(self, login: str) -> bool:
        self._mine.add(login)
        self._claimed()
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
        self._claimed()
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

        def read(pipe: Any, login: str) -> None:
            pipe.zrangebyscore(self._key(login), now, "+inf", start=0, num=1, withscores=True)

        found: dict[str, datetime | None] = {}
        for group, answers in await self._each_shard(wanted, read):
            if isinstance(answers, BaseException):
                log.warning(
                    "presence of %d users read from this process only (broker unreachable): %s",
                    len(group),
                    answers,
                )
                found.update({login: None for login in group if login in self._mine})
                continue
            for login, members in zip(group, answers, strict=True):
                if members:
                    # The freshest claim was made ``ttl`` before it expires.
                    _, expires = max(members, key=lambda member: member[1])
                    found[login] = datetime.fromtimestamp(float(expires) - self.ttl, UTC)
        return {login: found[login] for login in wanted if login in found}

    async def start(self) -> None:
        if self._refresher is None:
            self._refresher = asyncio.create_task(self._refresh())

    async def aclose(self) -> None:
        await cancel_and_wait(self._refresher, what="the presence refresher")
        self._refresher = None
        mine, self._mine = list(self._mine), set()
        self._claimed()
        if mine:
            # Errors are ignored: the claims lapse by themselves.
            await self._each_shard(mine, lambda pipe, login: pipe.zrem(self._key(login), self.process))

    async def _refresh(self) -> None:
        while True:
            await asyncio.sleep(self.refresh)
            if not self._mine:
                continue
            expires = time.time() + self.ttl

            def renew(pipe: Any, login: str, expires: float = expires) -> None:
                key = self._key(login)
                pipe.zadd(key, {self.process: expires})
                pipe.expire(key, math.ceil(self.ttl) + 1)

            for group, answers in await self._each_shard(list(self._mine), renew):
                if isinstance(answers, BaseException):
                    log.warning("could not refresh %d presence claims: %s", len(group), answers)
