"""Many Cassandra requests at once, with a bound on how many are in flight.

An upload of 5000 contacts is thousands of single-partition writes. Sent one
after the other they take thousands of round trips; sent all at once they
flood the driver's connection and the coordinator's queues. :class:`InFlightLimit`
runs them concurrently, at most ``limit`` at a time in the whole process (the
semaphore is shared by every upload), so a second large upload queues behind
the first instead of doubling the load on Cassandra.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


class InFlightLimit:
    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"the in-flight limit must be at least 1, got {limit}")
        self.limit = limit
        self._slots = asyncio.Semaphore(limit)
        self.in_flight = 0
        #: The most requests ever in flight at once (observed by the tests and benchmarks).
        self.peak = 0

    async def _one(self, call: Callable[[], Awaitable[T]]) -> T:
        async with self._slots:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            try:
                return await call()
            finally:
                self.in_flight -= 1

    async def run_all(self, calls: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
        """Results in the order of ``calls``. The first failure cancels the calls not yet
        finished and is raised; the writes of this module are idempotent, so a retry
        of the whole operation completes what was cut short."""
        results: dict[int, T] = {}
        next_index = 0

        async def worker() -> None:
            nonlocal next_index
            while next_index < len(calls):
                index = next_index
                next_index += 1
                results[index] = await self._one(calls[index])

        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(min(self.limit, len(calls))):
                    group.create_task(worker())
        except BaseExceptionGroup as group_error:
            raise group_error.exceptions[0] from None
        return [results[index] for index in range(len(calls))]
