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
    """Items in the list's order. ``has_next``: more items lie beyond the page in the
    direction it was read (towards the tail for a forward page, the head for a backward one)."""

    items: list[tuple[Position, T]]
    has_next: bool


@dataclass(frozen=True)
class Paged(Generic[T]):
    """A page read one way (:meth:`BucketedTimeline.read`): items in the list's order,
    ``more`` past them in the direction read, and ``beyond``, whether any lie past them
    the other way: known (False at the list's end), or a probe that reads it."""

    items: list[tuple[Position, T]]
    more: bool
    beyond: bool | Callable[[], Awaitable[bool]]


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


#: What a resuming subscription replays at most; past it, the client pages with `last`/`before`.
REPLAY_MAX = 500


class Seam:
    """Where a replay of stored messages meets live delivery. The subscription registered
    before the replay read and holds what arrives meanwhile; a held event is passed on
    when its message is past ``after`` and was not replayed. Past ``after``: a process
    hands a channel's events to its subscriptions in the order they came, so one that
    registers while older ones still wait their turn receives those too, and the client
    has them. Not replayed: stored before the replay read it, announced after the
    registration, it is in both, and goes once.

    What this cannot tell: a message whose send began before ``after``'s (an older id)
    and ended after the client received ``after``, racing it within the send's few
    milliseconds, is neither replayed nor passed on when the client resumed meanwhile.
    Sends from one client are never such a pair; the conversation's list shows it."""

    def __init__(self, after: UUID, replayed: Sequence[UUID]) -> None:
        self._floor = clock.timeuuid_order(after)
        self._replayed = set(replayed)

    def newer(self, message_id: UUID) -> bool:
        return message_id not in self._replayed and clock.timeuuid_order(message_id) > self._floor


def _ignore(_: Row) -> None:
    return None


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
        before = ">" if newest_first else "<"
        #: Reading towards the head is reading against the clustering order.
        reverse = "ASC" if newest_first else "DESC"
        self._key_width = len(key)
        self._item_id = item_id
        self._index_from_start = f"SELECT bucket FROM {index} WHERE {where} LIMIT ?"
        self._index_past = f"SELECT bucket FROM {index} WHERE {where} AND bucket {past} ? LIMIT ?"
        self._items_from_start = f"SELECT {columns} FROM {items} WHERE {where} AND bucket = ? LIMIT ?"
        self._items_past = (
            f"SELECT {columns} FROM {items} WHERE {where} AND bucket = ? AND {item_id} {past} ? LIMIT ?"
        )
        by_bucket = f"ORDER BY bucket {reverse} LIMIT ?"
        by_item = f"ORDER BY {item_id} {reverse} LIMIT ?"
        self._index_from_tail = f"SELECT bucket FROM {index} WHERE {where} {by_bucket}"
        self._index_before = f"SELECT bucket FROM {index} WHERE {where} AND bucket {before} ? {by_bucket}"
        self._items_from_tail = f"SELECT {columns} FROM {items} WHERE {where} AND bucket = ? {by_item}"
        self._items_before = (
            f"SELECT {columns} FROM {items} WHERE {where} AND bucket = ? AND {item_id} {before} ? {by_item}"
        )
        self._item_at = f"SELECT {item_id} FROM {items} WHERE {where} AND bucket = ? AND {item_id} = ?"
        placeholders = ", ".join("?" for _ in range(len(key) + 1))
        self._add_bucket = f"INSERT INTO {index} ({', '.join(key)}, bucket) VALUES ({placeholders})"

    async def read(
        self,
        db: Database,
        key: Sequence[object],
        convert: Callable[[Row], T],
        *,
        size: int,
        cursor: Position | None,
        backward: bool = False,
    ) -> Paged[T]:
        """``size`` items from ``cursor`` towards the tail (``first``/``after``) or the head
        (``last``/``before``, see :meth:`page_back`), with what lies past them each way."""
        if backward:
            page = await self.page_back(db, key, convert, last=size, before=cursor)
        else:
            page = await self.page(db, key, convert, first=size, after=cursor)
        beyond: bool | Callable[[], Awaitable[bool]] = False
        if cursor is not None:
            start = cursor
            edge = page.items[-1 if backward else 0][0] if page.items else None

            async def probe() -> bool:
                if edge is not None:
                    return await self._has(db, key, edge, towards_head=not backward)
                # An empty page: the cursor's own item, if it is still there, lies beyond.
                if await self._has(db, key, start, towards_head=not backward):
                    return True
                return await self.exists(db, key, start)

            beyond = probe
        return Paged(page.items, page.has_next, beyond)

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
        return await self._read(db, key, convert, first, after, backward=False)

    async def page_back(
        self,
        db: Database,
        key: Sequence[object],
        convert: Callable[[Row], T],
        *,
        last: int,
        before: Position | None,
    ) -> Page[T]:
        """The ``last`` items just before ``before`` (nearer the head of the list: newer, for a
        newest-first timeline), or the tail's ``last`` items without it; in the list's order,
        ``has_next`` telling whether more lie beyond them towards the head. The walk is
        :func:`read_page`'s against the clustering order, which Cassandra reads as cheaply."""
        page = await self._read(db, key, convert, last, before, backward=True)
        return Page(items=page.items[::-1], has_next=page.has_next)

    async def towards_head(
        self,
        db: Database,
        key: Sequence[object],
        convert: Callable[[Row], T],
        *,
        past: Position,
        limit: int,
        head_bucket: int | None = None,
    ) -> Page[T]:
        """Up to ``limit`` items past ``past`` towards the head (newer, for a newest-first
        timeline), nearest ``past`` first: what a subscription replays before it goes live.
        ``past`` need not be stored. ``head_bucket``, when the caller knows the head's
        bucket (from a conversation's last message), spares the index read once the walk
        is there: a replay within one bucket is one read."""

        def known_head(bucket: int | None) -> bool:
            return head_bucket is not None and bucket == head_bucket

        return await self._read(db, key, convert, limit, past, backward=True, stop=known_head)

    async def _has(
        self, db: Database, key: Sequence[object], position: Position, *, towards_head: bool
    ) -> bool:
        """Whether an item lies past ``position`` towards the head or the tail (one item read)."""
        return (await self._read(db, key, _ignore, 0, position, backward=towards_head)).has_next

    async def exists(self, db: Database, key: Sequence[object], position: Position) -> bool:
        """Whether the item at ``position`` is stored."""
        self._check(key)
        row = await db.execute(self._item_at, (*key, position.bucket, position.item_id))
        return row.one() is not None

    async def _read(
        self,
        db: Database,
        key: Sequence[object],
        convert: Callable[[Row], T],
        size: int,
        start: Position | None,
        *,
        backward: bool,
        stop: Callable[[int | None], bool] | None = None,
    ) -> Page[T]:
        """``stop(bucket)``: the walk knows no bucket lies past ``bucket`` (no index read)."""
        self._check(key)
        partition = tuple(key)
        if backward:
            index_first, index_next = self._index_from_tail, self._index_before
            items_first, items_next = self._items_from_tail, self._items_before
        else:
            index_first, index_next = self._index_from_start, self._index_past
            items_first, items_next = self._items_from_start, self._items_past

        async def list_buckets(past: int | None, limit: int) -> list[int]:
            if stop is not None and stop(past):
                return []
            params: tuple[object, ...]
            if past is None:
                cql, params = index_first, (*partition, limit)
            else:
                cql, params = index_next, (*partition, past, limit)
            result = await db.execute(cql, params)
            return [row["bucket"] for row in result.rows]

        async def fetch(bucket: int, past: UUID | None, limit: int) -> list[tuple[UUID, T]]:
            params: tuple[object, ...]
            if past is None:
                cql, params = items_first, (*partition, bucket, limit)
            else:
                cql, params = items_next, (*partition, bucket, past, limit)
            result = await db.execute(cql, params, fetch_size=limit)
            return [(row[self._item_id], convert(row)) for row in result.rows]

        return await read_page(list_buckets, fetch, first=size, after=start)

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
