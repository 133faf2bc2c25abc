"""Room history: messages bucketed by time, paged newest first across buckets.

A room's messages live in one partition per (room incarnation, bucket), the
bucket being the day ``yyyyMMdd`` by default (``GATEWAY_ROOM_BUCKET``), so no
partition grows without bound. ``room_message_buckets`` lists the buckets that
hold messages; :class:`gateway.db.timeline.BucketedTimeline` walks it to page across
buckets. Writes never need a lightweight transaction: every message has its
own timeuuid, and the bucket index rows are idempotent.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from uuid import UUID

from gateway.db.clock import new_timeuuid
from gateway.db.session import Database, Row
from gateway.db.timeline import (
    BucketedTimeline,
    Paged,
    Position,
    bucket_of_timeuuid,
    validate_granularity,
)
from gateway.rooms.records import RoomMessageRecord
from gateway.settings import Settings

#: (room id, bucket) pairs this process knows to be in the bucket index, so that
#: posting costs one write instead of two. Bounded: forgetting one only costs
#: one idempotent index write again.
KNOWN_BUCKETS_MAX = 10_000

#: Concurrent partition deletes while erasing a deleted room's history.
ERASE_CONCURRENCY = 32

_HISTORY = BucketedTimeline(
    items="room_messages",
    index="room_message_buckets",
    key=("room_id",),
    item_id="message_id",
    columns="message_id, author_login, content, system_message",
    newest_first=True,
)


class RoomHistory:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.granularity = validate_granularity(settings.room_bucket)
        self._known_buckets: OrderedDict[tuple[UUID, int], None] = OrderedDict()

    async def append(
        self,
        room_name: str,
        room_id: UUID,
        author_login: str | None,
        content: str,
        *,
        system: bool = False,
        message_id: UUID | None = None,
    ) -> RoomMessageRecord:
        """Store a message (under ``message_id`` when one was claimed for it). The
        bucket index row is written first: a crash between the two writes leaves
        an empty bucket listed (skipped by readers), never a message that paging
        cannot reach."""
        message = RoomMessageRecord(
            room_name, room_id, message_id or new_timeuuid(), author_login, content, system
        )
        bucket = bucket_of_timeuuid(message.id, self.granularity)
        key = (room_id, bucket)
        if key in self._known_buckets:
            self._known_buckets.move_to_end(key)
        else:
            await self.db.execute(*_HISTORY.add_bucket((room_id,), bucket))
            self._known_buckets[key] = None
            if len(self._known_buckets) > KNOWN_BUCKETS_MAX:
                self._known_buckets.popitem(last=False)
        await self.db.execute(
            "INSERT INTO room_messages (room_id, bucket, message_id, author_login, content, system_message)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (room_id, bucket, message.id, author_login, content, system),
        )
        return message

    async def message(self, room_name: str, room_id: UUID, message_id: UUID) -> RoomMessageRecord | None:
        row = (
            await self.db.execute(
                "SELECT message_id, author_login, content, system_message FROM room_messages"
                " WHERE room_id = ? AND bucket = ? AND message_id = ?",
                (room_id, bucket_of_timeuuid(message_id, self.granularity), message_id),
            )
        ).one()
        return self._record(room_name, room_id, row) if row else None

    async def page(
        self, room_name: str, room_id: UUID, *, size: int, cursor: Position | None, backward: bool = False
    ) -> Paged[RoomMessageRecord]:
        """``size`` messages, newest first, from ``cursor`` either way (bucket, message id)."""
        return await _HISTORY.read(
            self.db,
            (room_id,),
            lambda row: self._record(room_name, room_id, row),
            size=size,
            cursor=cursor,
            backward=backward,
        )

    async def since(
        self, room_name: str, room_id: UUID, after: UUID, limit: int
    ) -> list[RoomMessageRecord] | None:
        """The messages stored after the message ``after`` (which need not be stored),
        oldest first; None when there are more than ``limit``. One read per bucket from
        ``after``'s on, and one of the bucket index."""
        page = await _HISTORY.towards_head(
            self.db,
            (room_id,),
            lambda row: self._record(room_name, room_id, row),
            past=Position(bucket_of_timeuuid(after, self.granularity), after),
            limit=limit,
        )
        return None if page.has_next else [message for _, message in page.items]

    async def erase(self, room_id: UUID) -> None:
        """Delete every bucket partition of a room's history, then its bucket index: whole
        partitions of a deleted room incarnation, which nothing reads any more."""
        buckets = await _HISTORY.buckets(self.db, (room_id,))
        limit = asyncio.Semaphore(ERASE_CONCURRENCY)

        async def erase_bucket(bucket: int) -> None:
            """Drop one bucket's whole partition."""
            async with limit:
                await self.db.execute(
                    "DELETE FROM room_messages WHERE room_id = ? AND bucket = ?", (room_id, bucket)
                )

        await asyncio.gather(*(erase_bucket(bucket) for bucket in buckets))
        await self.db.execute("DELETE FROM room_message_buckets WHERE room_id = ?", (room_id,))
        for bucket in buckets:
            self._known_buckets.pop((room_id, bucket), None)

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
