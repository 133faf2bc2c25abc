"""Per-key asyncio locks: in-process queueing of writes that target the same partition.

Paxos serialises lightweight transactions per partition: two proposals on one
partition at the same time make one of them back off and retry inside
Cassandra, and compare-and-set losers re-read and retry on top. When many
requests of one gateway process write the same partition at once (300 senders
writing to one recipient), that contention costs round trips and, under load,
``WriteTimeout``s. Queueing them on an ``asyncio.Lock`` per partition first
means a process sends one proposal per partition at a time; correctness across
processes still comes from the LWT condition alone, this only removes
self-inflicted contention.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from gateway.db.session import ContentionExhausted


class KeyedLocks:
    """One ``asyncio.Lock`` per key, alive only while someone holds or awaits it."""

    def __init__(self, wait_seconds: float) -> None:
        self._wait_seconds = wait_seconds
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    def __len__(self) -> int:
        return len(self._locks)

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Hold ``key``'s lock; ``ContentionExhausted`` (UNAVAILABLE) after waiting too long."""
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            try:
                async with asyncio.timeout(self._wait_seconds):
                    await lock.acquire()
            except TimeoutError as exc:
                raise ContentionExhausted(f"queued too long behind writes to {key!r}") from exc
            try:
                yield
            finally:
                lock.release()
        finally:
            lock_now, users_now = self._locks[key]
            if users_now <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock_now, users_now - 1)
