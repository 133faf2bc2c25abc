"""``User.rooms``: a mixin of ``User`` (kept apart so ``gateway.users.schema`` need
not import the rooms schema, which refers back to ``User``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import strawberry
from strawberry.types import Info

from gateway.graph.context import context_of
from gateway.graph.pagination import Connection, page_size
from gateway.rooms.cursors import decode_user_room_cursor, user_room_cursor
from gateway.rooms.loaders import user_rooms_loader

if TYPE_CHECKING:
    from gateway.rooms.schema import Room

LazyRoom = Annotated["Room", strawberry.lazy("gateway.rooms.schema")]

USER_ROOMS_PAGE = 20


@strawberry.type
class UserRooms:
    if TYPE_CHECKING:
        login: str

    @strawberry.field(
        description="The rooms this user is in, by name. Rooms that no longer exist are never listed "
        "(a page may then hold fewer than `first` rooms)."
    )
    async def rooms(
        self, info: Info, first: int | None = USER_ROOMS_PAGE, after: str | None = None
    ) -> Connection[LazyRoom]:
        from gateway.rooms.schema import Room

        size = page_size(info, first, USER_ROOMS_PAGE)
        start = decode_user_room_cursor(after)
        if size == 0:
            return Connection.empty()
        page = await context_of(info).loader(user_rooms_loader).load((self.login, size, start))
        rooms = await Room.list_of(info, [record for _, record in page.rooms])
        return Connection.of(
            [
                (user_room_cursor(row.room_name, row.room_id), room)
                for (row, _), room in zip(page.rooms, rooms, strict=True)
            ],
            page.has_next,
        )
