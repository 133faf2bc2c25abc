"""Bucket arithmetic and the cross-bucket page walk of ``db/timeline.py``, without Cassandra.

``read_page`` takes the two reads it needs as functions, so the walk is checked
here against an in-memory timeline: which reads it makes, and that pages joined
end to end give every item once, in order.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from uuid import UUID

import pytest

from gateway.db import clock
from gateway.db.timeline import (
    BUCKET_BATCH,
    Position,
    bucket_of,
    bucket_of_timeuuid,
    read_page,
    validate_granularity,
)


def test_month_and_day_buckets_sort_like_time() -> None:
    moment = datetime(2026, 11, 23, 23, 59, 59, tzinfo=UTC)
    assert bucket_of(moment, "month") == 202611
    assert bucket_of(moment, "day") == 20261123
    assert bucket_of(moment + timedelta(seconds=1), "day") == 20261124
    assert bucket_of(datetime(2026, 12, 31, 23, 59, tzinfo=UTC), "month") < bucket_of(
        datetime(2027, 1, 1, tzinfo=UTC), "month"
    )


def test_buckets_are_taken_in_utc() -> None:
    # 01:00 on the 24th at UTC+2 is still the 23rd in UTC.
    local = datetime(2026, 11, 24, 1, 0, tzinfo=timezone(timedelta(hours=2)))
    assert bucket_of(local, "day") == 20261123
    # A naive datetime is read as UTC, as the driver returns timestamps.
    assert bucket_of(datetime(2026, 11, 24, 1, 0), "day") == 20261124


def test_second_buckets_round_down_to_their_size() -> None:
    moment = datetime(2026, 11, 23, 0, 0, 7, tzinfo=UTC)
    seconds = int(moment.timestamp())
    assert bucket_of(moment, "5s") == seconds - 2
    assert bucket_of(moment, "1s") == seconds
    assert bucket_of(moment, "3600s") == seconds - seconds % 3600


def test_a_timeuuid_falls_in_the_bucket_of_its_time() -> None:
    at = datetime(2026, 2, 28, 12, 0, tzinfo=UTC)
    item = clock.new_timeuuid(int(at.timestamp() * 1e9))
    assert bucket_of_timeuuid(item, "day") == 20260228


@pytest.mark.parametrize("granularity", ["week", "0s", "-5s", "5", "s", "05s", ""])
def test_unknown_granularities_are_refused(granularity: str) -> None:
    with pytest.raises(ValueError, match="granularity"):
        validate_granularity(granularity)


@pytest.mark.parametrize("granularity", ["month", "day", "1s", "86400s"])
def test_known_granularities_pass(granularity: str) -> None:
    assert validate_granularity(granularity) == granularity


class Timeline:
    """Items newest first in buckets, read the way the stores read Cassandra, with a log of reads."""

    def __init__(self, buckets: dict[int, int]) -> None:
        base = datetime(2026, 1, 1, tzinfo=UTC)
        self.items: dict[int, list[UUID]] = {}
        for bucket, count in buckets.items():
            ids = [
                clock.new_timeuuid(int((base + timedelta(hours=bucket, seconds=n)).timestamp() * 1e9))
                for n in range(count)
            ]
            self.items[bucket] = sorted(ids, key=clock.time_of, reverse=True)
        self.index = sorted((b for b, n in buckets.items() if n), reverse=True)
        self.reads: list[tuple[str, int | None]] = []

    async def list_buckets(self, past: int | None, limit: int) -> list[int]:
        self.reads.append(("index", past))
        return [b for b in self.index if past is None or b < past][:limit]

    async def fetch(self, bucket: int, past: UUID | None, limit: int) -> list[tuple[UUID, UUID]]:
        self.reads.append(("bucket", bucket))
        ids = self.items[bucket]
        if past is not None:
            ids = [i for i in ids if clock.time_of(i) < clock.time_of(past)]
        return [(i, i) for i in ids[:limit]]

    def all_items(self) -> list[UUID]:
        return [i for b in self.index for i in self.items[b]]


async def walk(timeline: Timeline, first: int) -> list[list[UUID]]:
    pages: list[list[UUID]] = []
    after: Position | None = None
    while True:
        page = await read_page(timeline.list_buckets, timeline.fetch, first=first, after=after)
        pages.append([item for _, item in page.items])
        if not page.has_next:
            return pages
        after = page.items[-1][0]


@pytest.mark.parametrize("first", [1, 3, 7, 50])
async def test_pages_cover_every_item_once_in_order(first: int) -> None:
    timeline = Timeline({1: 4, 2: 0, 3: 9, 5: 1, 8: 6})
    pages = await walk(timeline, first)
    assert [i for page in pages for i in page] == timeline.all_items()
    assert all(len(page) == first for page in pages[:-1])
    assert 0 < len(pages[-1]) <= first


async def test_a_page_inside_one_bucket_reads_the_index_once_and_one_bucket() -> None:
    timeline = Timeline({1: 30, 2: 30})
    page = await read_page(timeline.list_buckets, timeline.fetch, first=10, after=None)
    assert page.has_next
    assert timeline.reads == [("index", None), ("bucket", 2)]


async def test_a_cursor_finishes_its_bucket_before_walking_on() -> None:
    timeline = Timeline({1: 5, 2: 5})
    first_page = await read_page(timeline.list_buckets, timeline.fetch, first=3, after=None)
    timeline.reads.clear()
    second = await read_page(timeline.list_buckets, timeline.fetch, first=3, after=first_page.items[-1][0])
    assert timeline.reads == [("bucket", 2), ("index", 2), ("bucket", 1)]
    assert [i for _, i in second.items] == timeline.all_items()[3:6]


async def test_the_index_is_read_in_batches_past_many_empty_looking_buckets() -> None:
    # Many buckets of one item each: the walk reads the index once per BUCKET_BATCH buckets.
    count = BUCKET_BATCH * 2 + 3
    timeline = Timeline(dict.fromkeys(range(count), 1))
    page = await read_page(timeline.list_buckets, timeline.fetch, first=count, after=None)
    assert len(page.items) == count and not page.has_next
    assert sum(1 for kind, _ in timeline.reads if kind == "index") == 3


async def test_an_empty_timeline_is_one_index_read() -> None:
    timeline = Timeline({})
    page = await read_page(timeline.list_buckets, timeline.fetch, first=10, after=None)
    assert page.items == [] and not page.has_next
    assert timeline.reads == [("index", None)]
