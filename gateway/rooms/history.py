"""Room history: messages bucketed by time, paged newest first across buckets.

A room's messages live in one partition per (room incarnation, bucket), the
bucket being the day ``yyyyMMdd`` by default (``ROOM_BUCKET``), so no
partition grows without bound. ``room_message_buckets`` lists the buckets that
hold messages; :func:`gateway.db.timeline.read_page` walks it to page across
buckets. Writes never need a lightweight transaction: every message has its
own timeuuid, and the bucket index rows are idempotent.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from gateway.db.clock import new_timeuuid, time_of
from gateway.db.session import Database, Row
from gateway.db.timeline import Page, Position, bucket_of_timeuuid, read_page, validate_granularity
from gateway.settings import Settings

#: (room id, bucket) pairs this process knows to be in the bucket index, so that
#: posting costs one write instead of two. Bounded: forgetting one only costs
#: one idempotent index write again.
KNOWN_BUCKETS_MAX = 10_000

#: Concurrent partition deletes while erasing a deleted room's history.
ERASE_CONCURRENCY = 32

_MESSAGE_COLUMNS = "message_id, author_login, content, system_message"


@dataclass(frozen=True)
class RoomMessageRecord:
    room_name: str
    room_id: UUID
    id: UUID
    author_login: str | None
    content: str
    system_message: bool

    @property
    def posted_at(self) -> datetime:
        return time_of(self.id)


class RoomHistory:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.granularity = validate_granularity(settings.room_bucket)
        self._known_buckets: OrderedDict[tuple[UUID, int], None] = OrderedDict()

    async def append(
        self, room_name: str, room_id: UUID, author_login: str | None, content: str, *, system: bool = False
    ) -> RoomMessageRecord:
        """Store a message. The bucket index row is written first: a crash between the
        two writes leaves an empty bucket listed (skipped by readers), never a
        message that paging cannot reach."""
        message = RoomMessageRecord(room_name, room_id, new_timeuuid(), author_login, content, system)
        bucket = bucket_of_timeuuid(message.id, self.granularity)
        key = (room_id, bucket)
        if key in self._known_buckets:
            self._known_buckets.move_to_end(key)
        else:
            await self.db.execute(
                "INSERT INTO room_message_buckets (room_id, bucket) VALUES (?, ?)", (room_id, bucket)
            )
            self._known_buckets[key] = None
            if len(self._known_buckets) > KNOWN_BUCKETS_MAX:
                self._known_buckets.popitem(last=False)
        await self.db.execute(
            "INSERT INTO room_messages (room_id, bucket, message_id, author_login, content, system_message)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (room_id, bucket, message.id, author_login, content, system),
        )
        return message

    async def page(
        self, room_name: str, room_id: UUID, *, first: int, after: Position | None
    ) -> Page[RoomMessageRecord]:
        """``first`` messages newest first, continuing after ``after`` (bucket, message id)."""

        async def list_buckets(before: int | None, limit: int) -> list[int]:
            if before is None:
                result = await self.db.execute(
                    "SELECT bucket FROM room_message_buckets WHERE room_id = ? LIMIT ?", (room_id, limit)
                )
            else:
                result = await self.db.execute(
                    "SELECT bucket FROM room_message_buckets WHERE room_id = ? AND bucket < ? LIMIT ?",
                    (room_id, before, limit),
                )
            return [row["bucket"] for row in result.rows]

        async def fetch(bucket: int, before: UUID | None, limit: int) -> list[tuple[UUID, RoomMessageRecord]]:
            if before is None:
                result = await self.db.execute(
                    f"SELECT {_MESSAGE_COLUMNS} FROM room_messages WHERE room_id = ? AND bucket = ? LIMIT ?",
                    (room_id, bucket, limit),
                )
            else:
                result = await self.db.execute(
                    f"SELECT {_MESSAGE_COLUMNS} FROM room_messages"
                    " WHERE room_id = ? AND bucket = ? AND message_id < ? LIMIT ?",
                    (room_id, bucket, before, limit),
                )
            return [(row["message_id"], self._record(room_name, room_id, row)) for row in result.rows]

        if first == 0:
            return Page(items=[], has_next=False)
        return await read_page(list_buckets, fetch, first=first, after=after)

    async def erase(self, room_id: UUID) -> None:
        """Delete every bucket partition of a room's history, then its bucket index."""
        rows = await self.db.execute_all(
            "SELECT bucket FROM room_message_buckets WHERE room_id = ?", (room_id,)
        )
        limit = asyncio.Semaphore(ERASE_CONCURRENCY)

        async def erase_bucket(bucket: int) -> None:
            async with limit:
                await self.db.execute(
                    "DELETE FROM room_messages WHERE room_id = ? AND bucket = ?", (room_id, bucket)
                )

        await asyncio.gather(*(erase_bucket(row["bucket"]) for row in rows))
        await self.db.execute("DELETE FROM room_message_buckets WHERE room_id = ?", (room_id,))
        for row in rows:
            self._known_buckets.pop((room_id, row["bucket"]), None)

    @staticmethod
    def _record(room_name: str, room_id: UUID, row: Row) -> RoomMessageRecord:
        return RoomMessageRecord(
            room_name=room_name,
            room_id=room_id,
            id=row["message_id"],
            author_login=row["author_login"],
            content=row["content"] or "",
            system_message=bool(row["system_message"]),
        )
