"""Batched reads of the rooms domain, one instance per request.

- rooms by name: one ``IN`` read per 100 names;
- participant counts by incarnation: one ``IN`` read per 100 ids;
- pages of ``User.rooms`` keyed by (login, first, after): the slices of all
  users a request lists run together, their rooms come through the room
  loader in one batch, and stale rows are skipped here and deleted in the
  background (``MemberStore.repair_later``), never inside the read.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from gateway.db.session import IN_CHUNK, gathered
from gateway.graph.context import Context
from gateway.graph.dataloader import Loader
from gateway.rooms.member_store import MemberStore
from gateway.rooms.records import RoomRecord, UserRoom
from gateway.rooms.store import RoomStore

#: (login, first, after) of one ``User.rooms`` page.
UserRoomsKey = tuple[str, int, tuple[str, UUID] | None]


@dataclass(frozen=True)
class UserRoomsPage:
    #: Rooms that still exist as the incarnation joined, in name order, each with its row.
    rooms: list[tuple[UserRoom, RoomRecord]]
    has_next: bool


def room_loader(context: Context) -> Loader[str, RoomRecord | None]:
    store = context.store(RoomStore)

    async def load(names: list[str]) -> list[RoomRecord | None]:
        found = await store.get_many(names)
        return [found.get(name) for name in names]

    return Loader(load_fn=load, max_batch_size=IN_CHUNK)


def participant_count_loader(context: Context) -> Loader[UUID, int]:
    store = context.store(MemberStore)

    async def load(room_ids: list[UUID]) -> list[int]:
        counts = await store.counts(room_ids)
        return [max(counts.get(room_id, 0), 0) for room_id in room_ids]

    return Loader(load_fn=load, max_batch_size=IN_CHUNK)


def user_rooms_loader(context: Context) -> Loader[UserRoomsKey, UserRoomsPage]:
    members = context.store(MemberStore)
    rooms = context.loader(room_loader)

    async def load(keys: list[UserRoomsKey]) -> list[UserRoomsPage]:
        slices = await gathered([members.rooms_of(login, first, after) for login, first, after in keys])
        records = await rooms.load_many([row.room_name for s in slices for row in s.rows])
        found = iter(records)
        pages: list[UserRoomsPage] = []
        stale: list[UserRoom] = []
        for piece in slices:
            current: list[tuple[UserRoom, RoomRecord]] = []
            for row in piece.rows:
                record = next(found)
                if record is not None and record.id == row.room_id:
                    current.append((row, record))
                else:
                    stale.append(row)
            pages.append(UserRoomsPage(current, piece.has_next))
        members.repair_later(stale)
        return pages

    return Loader(load_fn=load)
