"""Time-bucketed partitions and paging across them.

A partition that grows with time (a conversation, a room's history, a folder)
is split into buckets: the partition key carries a bucket number derived from
the item's time. A small "bucket index" partition per owner lists the buckets
that have items, so paging can walk from one bucket to the next without
probing empty ones.

Bucket numbers are integers that sort like time:

- ``year``: ``yyyy`` (2026),
- ``month``: ``yyyyMM`` (202611),
- ``day``: ``yyyyMMdd`` (20261122),
- ``<N>s``: the Unix time in seconds, rounded down to a multiple of N (for tests
  and for very busy partitions).
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, TypeVar
from uuid import UUID

from gateway.db import clock
from gateway.db.session import Database, Params, Row

T = TypeVar("T")

_SECONDS = re.compile(r"([1-9][0-9]*)s")


def validate_granularity(granularity: str) -> str:
    if granularity in {"year", "month", "day"} or _SECONDS.fullmatch(granularity):
        return granularity
    raise ValueError(f"bucket granularity must be 'year', 'month', 'day' or '<N>s', got {granularity!r}")


def bucket_of(moment: datetime, granularity: str) -> int:
    """The bucket number that ``moment`` (UTC) falls into."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    moment = moment.astimezone(UTC)
    if granularity == "year":
        return moment.year
    if granularity == "month":
        return moment.year * 100 + moment.month
    if granularity == "day":
        return (moment.year * 100 + moment.month) * 100 + moment.day
    match = _SECONDS.fullmatch(granularity)
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

#: Rows per read when a maintenance sweep (a recount, a deletion) walks a whole timeline.
SWEEP_SLICE = 1000


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


class BucketedTimeline:
    """The CQL of one bucketed timeline: an item table and its bucket index.

    Both tables are keyed by the same partition key columns (``key``); the item
    table adds ``bucket`` to its partition key and clusters by the item's
    timeuuid (``item_id``); the index clusters by ``bucket``. Both cluster in
    reading order: descending for a ``newest_first`` timeline, ascending
    otherwise, so "past" a bucket or an item is ``<`` or ``>`` accordingly and a
    plain ``LIMIT`` slice reads from the start.
    """

    def __init__(
        self,
        *,
        items: str,
        index: str,
        key: Sequence[str],
        item_id: str,
        columns: str,
        newest_first: bool,
    ) -> None:
        where = " AND ".join(f"{column} = ?" for column in key)
        past = "<" if newest_first else ">"
        self._key_width = len(key)
        self._item_id = item_id
        self._index_from_start = f"SELECT bucket FROM {index} WHERE {where} LIMIT ?"
        self._index_past = f"SELECT bucket FROM {index} WHERE {where} AND bucket {past} ? LIMIT ?"
        self._items_from_start = f"SELECT {columns} FROM {items} WHERE {where} AND bucket = ? LIMIT ?"
        self._items_past = (
            f"SELECT {columns} FROM {items} WHERE {where} AND bucket = ? AND {item_id} {past} ? LIMIT ?"
        )
        placeholders = ", ".join("?" for _ in range(len(key) + 1))
        self._add_bucket = f"INSERT INTO {index} ({', '.join(key)}, bucket) VALUES ({placeholders})"

    async def page(
        self,
        db: Database,
        key: Sequence[object],
        convert: Callable[[Row], T],
        *,
        first: int,
        after: Position | None,
    ) -> Page[T]:
        """``first`` items of the timeline of ``key`` in reading order (see :func:`read_page`)."""
        self._check(key)
        partition = tuple(key)

        async def list_buckets(past: int | None, limit: int) -> list[int]:
            params: tuple[object, ...]
            if past is None:
                cql, params = self._index_from_start, (*partition, limit)
            else:
                cql, params = self._index_past, (*partition, past, limit)
            result = await db.execute(cql, params)
            return [row["bucket"] for row in result.rows]

        async def fetch(bucket: int, past: UUID | None, limit: int) -> list[tuple[UUID, T]]:
            params: tuple[object, ...]
            if past is None:
                cql, params = self._items_from_start, (*partition, bucket, limit)
            else:
                cql, params = self._items_past, (*partition, bucket, past, limit)
            result = await db.execute(cql, params, fetch_size=limit)
            return [(row[self._item_id], convert(row)) for row in result.rows]

        return await read_page(list_buckets, fetch, first=first, after=after)

    async def buckets(self, db: Database, key: Sequence[object]) -> list[int]:
        """Every bucket listed for ``key``, in reading order: keyed slices of
        ``SWEEP_SLICE`` rows, each continuing past the last bucket read."""
        self._check(key)
        out: list[int] = []
        while True:
            if out:
                cql, params = self._index_past, (*key, out[-1], SWEEP_SLICE)
            else:
                cql, params = self._index_from_start, (*key, SWEEP_SLICE)
            rows = (await db.execute(cql, params, fetch_size=SWEEP_SLICE)).rows
            out.extend(row["bucket"] for row in rows)
            if len(rows) < SWEEP_SLICE:
                return out

    async def bucket_items(
        self, db: Database, key: Sequence[object], bucket: int, convert: Callable[[Row], T]
    ) -> list[T]:
        """Every item of one bucket, in reading order: keyed slices of ``SWEEP_SLICE`` rows."""
        self._check(key)
        out: list[T] = []
        last: UUID | None = None
        while True:
            if last is None:
                cql, params = self._items_from_start, (*key, bucket, SWEEP_SLICE)
            else:
                cql, params = self._items_past, (*key, bucket, last, SWEEP_SLICE)
            rows = (await db.execute(cql, params, fetch_size=SWEEP_SLICE)).rows
            out.extend(convert(row) for row in rows)
            if len(rows) < SWEEP_SLICE:
                return out
            last = rows[-1][self._item_id]

    def add_bucket(
        self, key: Sequence[object], bucket: int, *, timestamp: int | None = None
    ) -> tuple[str, Params]:
        """The idempotent write that lists ``bucket`` in ``key``'s index, for a batch or
        ``execute``; ``USING TIMESTAMP`` when the caller's writes all carry one."""
        self._check(key)
        if timestamp is None:
            return self._add_bucket, (*key, bucket)
        return f"{self._add_bucket} USING TIMESTAMP ?", (*key, bucket, timestamp)

    def _check(self, key: Sequence[object]) -> None:
        if len(key) != self._key_width:
            raise ValueError(f"the timeline's key has {self._key_width} columns, got {len(key)} values")
