"""The DataLoader every domain builds its per-request loaders from.

It is Strawberry's: the same batches (every key asked for before the loop turns
joins one ``load_fn`` call, at most ``max_batch_size`` keys each), the same
cache of one future per key for the request. Two things cost less per key,
which matters when a page resolver loads the users of 50 items at once:

- a key joins its batch without a done-callback on its future (Strawberry's only
  cancels the batch early when every caller cancelled; ``dispatch_batch`` still
  skips a batch whose futures are all cancelled);
- ``load_many`` awaits the keys' futures in turn instead of through
  ``asyncio.gather``: they settle together when their batch does, so the first
  await is the only one that waits.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from typing import TypeVar

from strawberry.dataloader import DataLoader, LoaderTask, get_current_batch

K = TypeVar("K")
T = TypeVar("T")


class Loader(DataLoader[K, T]):
    def load(self, key: K) -> Awaitable[T]:
        if self.cache:
            cached = self.cache_map.get(key)
            if cached is not None and not cached.cancelled():
                return cached
        future = self.loop.create_future()
        if self.cache:
            self.cache_map.set(key, future)
        get_current_batch(self).tasks.append(LoaderTask(key, future))
        return future

    def load_many(self, keys: Iterable[K]) -> Awaitable[list[T]]:
        return _in_turn([self.load(key) for key in keys])


async def _in_turn(awaitables: list[Awaitable[T]]) -> list[T]:
    return [await awaitable for awaitable in awaitables]
