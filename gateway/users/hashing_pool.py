"""A bounded thread pool of its own for password hashing.

argon2 holds a core and 64 MiB for a good fraction of a second. On the default
executor a sign-in flood would queue behind it everything else that runs there
(statement preparation, the driver's connects), and queue without end. Here it
runs on its own threads, one per core unless configured, and at most
``queue`` calls wait for one; the next is refused at once with RATE_LIMITED
(the client's burst is the cause, and waiting a second is the remedy; UNAVAILABLE
would say Cassandra is down).
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import lru_cache
from typing import Any, TypeVar

from gateway.errors import RateLimited
from gateway.settings import Settings

T = TypeVar("T")

BUSY_MESSAGE = "Too many sign-ins at once; try again in a moment."


class HashingPool:
    def __init__(self, threads: int, queue: int) -> None:
        self.threads = threads
        self.capacity = threads + queue
        self._executor = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="password-hash")
        self._lock = threading.Lock()
        self._in_flight = 0

    @property
    def in_flight(self) -> int:
        return self._in_flight

    def _done(self, _: Future[Any]) -> None:
        with self._lock:
            self._in_flight -= 1

    async def run(self, fn: Callable[[], T]) -> T:
        """``fn()`` on a hashing thread; RateLimited when the pool and its queue are full."""
        with self._lock:
            if self._in_flight >= self.capacity:
                raise RateLimited(1, BUSY_MESSAGE)
            self._in_flight += 1
        try:
            future = self._executor.submit(fn)
        except BaseException:
            with self._lock:
                self._in_flight -= 1
            raise
        future.add_done_callback(self._done)
        return await asyncio.wrap_future(future)


@lru_cache(maxsize=8)
def _pool(threads: int, queue: int) -> HashingPool:
    return HashingPool(threads, queue)


def hashing_pool(settings: Settings) -> HashingPool:
    """The process's pool for these settings."""
    return _pool(settings.password_threads or os.cpu_count() or 1, settings.password_queue)
