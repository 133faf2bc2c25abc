"""Time-bucketed partitions and paging across them.

A partition that grows with time (a conversation, a room's history, a folder)
is split into buckets: the partition key carries a bucket number derived from
the item's time. A small "bucket index" partition per owner lists the buckets
that have items, so paging can walk from one bucket to the next without
probing empty ones.

Bucket numbers are integers that sort like time:

- ``month``: ``yyyyMM`` (202611),
- ``day``: ``yyyyMMdd`` (20261122),
- ``<N>s``: the Unix time in seconds, rounded down to a multiple of N (for tests
  and for very busy partitions).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, TypeVar
from uuid import UUID

from gateway.db import clock

T = TypeVar("T")

_SECONDS = re.compile(r"^([1-9][0-9]*)s$")


def validate_granularity(granularity: str) -> str:
    if granularity in {"month", "day"} or _SECONDS.match(granularity):
        return granularity
    raise ValueError(f"bucket granularity must be 'month', 'day' or '<N>s', got {granularity!r}")


def bucket_of(moment: datetime, granularity: str) -> int:
    """The bucket number that ``moment`` (UTC) falls into."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    if granularity == "month":
        return moment.year * 100 + moment.month
    if granularity == "day":
        return (moment.year * 100 + moment.month) * 100 + moment.day
    match = _SECONDS.match(granularity)
    if not match:
        raise ValueError(f"unknown bucket granularity {granularity!r}")
    size = int(match.group(1))
    seconds = int(moment.timestamp())
    return seconds - seconds % size


def bucket_of_timeuuid(item_id: UUID, granularity: str) -> int:
    return bucket_of(clock.time_of(item_id), granularity)


@dataclass(frozen=True)
class Position:
    """Where a page ended: the bucket and the last item id read in it."""

    bucket: int
    item_id: UUID


@dataclass(frozen=True)
class Page(Generic[T]):
    items: list[tuple[Position, T]]
    has_next: bool


ListBuckets = Callable[[int | None, int], Awaitable[list[int]]]
"""(strictly_past_this_bucket or None for the start, limit) -> bucket numbers in reading order."""

FetchBucket = Callable[[int, UUID | None, int], Awaitable[list[tuple[UUID, T]]]]
"""(bucket, strictly_past_this_id or None, limit) -> (id, item) pairs in reading order."""

#: How many bucket numbers one read of the index returns.
BUCKET_BATCH = 16


async def read_page(
    list_buckets: ListBuckets,
    fetch: FetchBucket[T],
    *,
    first: int,
    after: Position | None,
) -> Page[T]:
    """Read ``first`` items in reading order, continuing after ``after``.

    Finishes the bucket the cursor points into, then walks the bucket index
    lazily: one index read per ``BUCKET_BATCH`` buckets and one read per bucket
    that contributes items. One extra item is asked for to tell whether a next
    page exists. Positions are (bucket, timeuuid), so items that arrive
    meanwhile never shift a later page.
    """
    wanted = first + 1
    out: list[tuple[Position, T]] = []

    async def take(bucket: int, past: UUID | None) -> None:
        rows = await fetch(bucket, past, wanted - len(out))
        out.extend((Position(bucket, item_id), item) for item_id, item in rows)

    cursor: int | None = None
    if after is not None:
        await take(after.bucket, after.item_id)
        cursor = after.bucket
    while len(out) < wanted:
        buckets = await list_buckets(cursor, BUCKET_BATCH)
        for bucket in buckets:
            await take(bucket, None)
            if len(out) >= wanted:
                break
        if len(buckets) < BUCKET_BATCH:
            break
        cursor = buckets[-1]
    return Page(items=out[:first], has_next=len(out) > first)
