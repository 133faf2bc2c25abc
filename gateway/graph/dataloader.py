"""The DataLoader every domain builds its per-request loaders from.

It is Strawberry's: the same batches (every key asked for before the loop turns
joins one ``load_fn`` call, at most ``max_batch_size`` keys each), the same
cache of one future per key for the request. Less is spent per key, which
matters when a page resolver loads the users of 50 items at once:

- the cache is read and written as the dict it is (Strawberry's goes through
  two method calls and a key function per access);
- a key joins its batch without a done-callback on its future (Strawberry's only
  cancels the batch early when every caller cancelled; ``dispatch_batch`` still
  skips a batch whose futures are all cancelled);
- ``load_many`` finds the current batch once, not once per key, and awaits the
  keys' futures in turn instead of through ``asyncio.gather``: they settle
  together when their batch does, so the first await is the only one that waits.

``tests/unit/test_dataloader.py`` holds it to Strawberry's batches and answers. What it
uses of Strawberry's DataLoader beyond its documented API comes from
:mod:`gateway.graph.executor_internals`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Hashable, Iterable, Sequence
from typing import TypeVar

from strawberry.dataloader import DataLoader

from gateway.graph.executor_internals import Batch, DefaultCache, LoaderTask, get_current_batch

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


class Loader(DataLoader[K, T]):
    def __init__(
        self,
        load_fn: Callable[[list[K]], Awaitable[Sequence[T | BaseException]]],
        max_batch_size: int | None = None,
        cache: bool = True,
    ) -> None:
        super().__init__(load_fn=load_fn, max_batch_size=max_batch_size, cache=cache)
        cache_map = self.cache_map if cache else None
        #: The cache's own dict, key -> future (keys are their own cache keys); None: no cache.
        self._futures: dict[Hashable, asyncio.Future[T]] | None = (
            cache_map.cache_map if isinstance(cache_map, DefaultCache) else None
        )

    def load(self, key: K) -> Awaitable[T]:
        futures = self._futures
        if futures is not None:
            cached = futures.get(key)
            if cached is not None and not cached.cancelled():
                return cached
        future = self.loop.create_future()
        if futures is not None:
            futures[key] = future
        get_current_batch(self).tasks.append(LoaderTask(key, future))
        return future

    def load_many(self, keys: Iterable[K]) -> Awaitable[list[T]]:
        futures = self._futures
        create_future = self.loop.create_future
        limit = self.max_batch_size
        batch: Batch[K, T] | None = None
        found: list[asyncio.Future[T]] = []
        for key in keys:
            future = futures.get(key) if futures is not None else None
            if future is None or future.cancelled():
                future = create_future()
                if futures is not None:
                    futures[key] = future
                if batch is None or (limit and len(batch.tasks) >= limit):
                    batch = get_current_batch(self)
                batch.tasks.append(LoaderTask(key, future))
            found.append(future)
        return _in_turn(found)


async def _in_turn(awaitables: list[asyncio.Future[T]]) -> list[T]:
    return [await awaitable for awaitable in awaitables]
