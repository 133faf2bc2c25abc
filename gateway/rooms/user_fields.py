"""``User.rooms``: a mixin of ``User`` (kept apart so ``gateway.users.schema`` need
not import the rooms schema, which refers back to ``User``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry
from strawberry.types import Info

from gateway.graph.context import context_of
from gateway.rooms.loaders import room_loader
from gateway.rooms.store import RoomRecord, RoomStore

if TYPE_CHECKING:
    from gateway.rooms.schema import Room

LazyRoom = Annotated["Room", strawberry.lazy("gateway.rooms.schema")]


@strawberry.type
class UserRooms:
    if TYPE_CHECKING:
        login: str

    @strawberry.field(
        description="The rooms this user is in, by name. Rooms that no longer exist are never listed."
    )
    async def rooms(self, info: Info) -> list[LazyRoom]:
        from gateway.rooms.schema import Room

        context = context_of(info)
        store = context.store(RoomStore)
        memberships = await store.memberships(self.login)
        records = await context.loader(room_loader).load_many([m.room_name for m in memberships])
        current: list[RoomRecord] = []
        for membership, record in zip(memberships, records, strict=True):
            if record is not None and self.login in record.participants:
                current.append(record)
            else:
                # Left behind by a deletion (or a leave) that a reader saw half done.
                await store.forget_stale_membership(self.login, membership)
        return await Room.list_of(info, current)
