"""Chat rooms: types, queries, mutations and the live room subscription."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable
from datetime import datetime

import strawberry
from strawberry.types import Info

from gateway.errors import BadUserInput, Forbidden, NotFound
from gateway.graph.context import Context, context_of
from gateway.graph.node import Node, global_id
from gateway.graph.pagination import (
    Connection,
    decode_position,
    page_size,
    position_cursor,
)
from gateway.graph.selection import selects
from gateway.rooms import rules
from gateway.rooms.cursors import scan_cursor, scan_position
from gateway.rooms.events import RoomEvent, room_channel
from gateway.rooms.history import RoomHistory, RoomMessageRecord
from gateway.rooms.loaders import room_loader
from gateway.rooms.paging_state import InvalidPagingState
from gateway.rooms.service import RoomService
from gateway.rooms.store import RoomRecord, RoomStore
from gateway.users.schema import (
    Prefetched,
    User,
    prefetched_user,
    prefetched_user_or_none,
    prefetched_users,
    users_by_login,
)

ROOMS_PAGE = 20
MESSAGES_PAGE = 50


def service(context: Context) -> RoomService:
    return RoomService(
        context.db, context.store(RoomStore), context.store(RoomHistory), context.pubsub
    )


@strawberry.type(description="A chat room. Anyone may see rooms and who is in them.")
class Room(Node):
    """Fields known from the record are filled at construction: plain attributes resolve
    on Strawberry's fast path."""

    def _creator(self, info: Info) -> User | Awaitable[User]:
        return prefetched_user(info, self._users, self._record.creator_login)

    def _participants(self, info: Info) -> list[User] | Awaitable[list[User]]:
        return prefetched_users(info, self._users, sorted(self._record.participants))

    name: str
    banner: str | None
    created_at: datetime
    creator: User = strawberry.field(resolver=_creator, graphql_type=User)
    participants: list[User] = strawberry.field(
        resolver=_participants, graphql_type=list[User], description="Ordered by login."
    )
    participant_count: int
    _record: strawberry.Private[RoomRecord]
    #: Users prefetched by ``list_of``.
    _users: strawberry.Private[Prefetched] = None

    @classmethod
    def of(cls, record: RoomRecord, users: Prefetched = None) -> Room:
        return cls(
            id=global_id("Room", record.name),
            name=record.name,
            banner=record.banner,
            created_at=record.created_at,
            participant_count=len(record.participants),
            _record=record,
            _users=users,
        )

    @classmethod
    async def list_of(cls, info: Info, records: list[RoomRecord]) -> list[Room]:
        """Rooms of a list, with the creators and participants the query selects
        loaded in one batch for the whole list."""
        logins: set[str] = set()
        if selects(info, "creator"):
            logins.update(r.creator_login for r in records)
        if selects(info, "participants"):
            logins.update(login for r in records for login in r.participants)
        users = await users_by_login(info, logins) if logins else None
        return [cls.of(record, users) for record in records]

    @strawberry.field(
        description="Newest first. Participants only: FORBIDDEN for others, UNAUTHENTICATED when "
        "signed out. Includes system messages (joins, leaves)."
    )
    async def messages(
        self, info: Info, first: int | None = MESSAGES_PAGE, after: str | None = None
    ) -> Connection[RoomMessage]:
        context = context_of(info)
        size = page_size(info, first, MESSAGES_PAGE)
        position = decode_position(after)
        viewer = await context.require_viewer()
        if viewer not in self._record.participants:
            raise Forbidden(f"Join '{self.name}' to read its messages.")
        page = await context.store(RoomHistory).page(
            self.name, self._record.id, first=size, after=position
        )
        authors = None
        if selects(info, "author"):
            authors = await users_by_login(info, (m.author_login for _, m in page.items if m.author_login))
        room = Room.of(self._record)
        return Connection.of(
            [
                (position_cursor(pos), RoomMessage.of(message, room, authors))
                for pos, message in page.items
            ],
            page.has_next,
        )


@strawberry.type(description="A message in a room; system messages (joins, leaves) have no author.")
class RoomMessage:
    """Fields other than ``author`` are filled at construction: plain attributes resolve
    on Strawberry's fast path."""

    id: strawberry.ID
    content: str
    system_message: bool
    posted_at: datetime
    room: Room = strawberry.field(description="The room as it stood when the message was read or delivered.")
    _author_login: strawberry.Private[str | None]
    #: Authors prefetched by the page resolver; None: not prefetched.
    _authors: strawberry.Private[Prefetched] = None

    @classmethod
    def of(cls, record: RoomMessageRecord, room: Room, authors: Prefetched = None) -> RoomMessage:
        return cls(
            id=strawberry.ID(str(record.id)),
            content=record.content,
            system_message=record.system_message,
            posted_at=record.posted_at,
            room=room,
            _author_login=record.author_login,
            _authors=authors,
        )

    @strawberry.field(description="Null for system messages.", graphql_type=User | None)
    def author(self, info: Info) -> User | Awaitable[User | None] | None:
        return prefetched_user_or_none(info, self._authors, self._author_login)


async def room_node(info: Info, name: str) -> Room | None:
    """A room by name, None when there is none (``room`` and ``node``)."""
    try:
        key = rules.room_name(name)
    except BadUserInput:
        return None
    record = await context_of(info).loader(room_loader).load(key)
    return Room.of(record) if record else None


@strawberry.type
class RoomQuery:
    @strawberry.field(description="A room by name; null when there is none.")
    async def room(self, info: Info, name: str) -> Room | None:
        return await room_node(info, name)

    @strawberry.field(
        description="Every room, in the table's storage order (not alphabetical); the cursor is "
        "Cassandra's own paging state."
    )
    async def rooms(
        self, info: Info, first: int | None = ROOMS_PAGE, after: str | None = None
    ) -> Connection[Room]:
        size = page_size(info, first, ROOMS_PAGE)
        start = scan_position(after)
        if size == 0:
            return Connection.empty()
        try:
            page = await context_of(info).store(RoomStore).scan(size, start)
        except InvalidPagingState as exc:
            raise BadUserInput("after", "Invalid cursor.") from exc
        found = [(pos, record) for pos, record in page.rooms if record is not None]
        rooms = await Room.list_of(info, [record for _, record in found])
        return Connection.of(
            [(scan_cursor(pos), room) for (pos, _), room in zip(found, rooms, strict=True)], page.has_next
        )


@strawberry.type
class RoomMutation:
    @strawberry.mutation(description="Create a room and join it. CONFLICT when the name is taken.")
    async def create_room(self, info: Info, name: str, banner: str | None = None) -> Room:
        context = context_of(info)
        viewer = await context.require_viewer()
        record = await service(context).create(viewer, rules.room_name(name), rules.banner(banner))
        return Room.of(record)

    @strawberry.mutation(description="Join a room; joining twice is harmless. NOT_FOUND if it is gone.")
    async def join_room(self, info: Info, name: str) -> Room:
        context = context_of(info)
        viewer = await context.require_viewer()
        return Room.of(await service(context).join(viewer, rules.room_name(name)))

    @strawberry.mutation(description="Leave a room; false when you were not in it.")
    async def leave_room(self, info: Info, name: str) -> bool:
        context = context_of(info)
        viewer = await context.require_viewer()
        return await service(context).leave(viewer, rules.room_name(name))

    @strawberry.mutation(
        description="Delete a room you created: it leaves every participant's rooms and its history "
        "is erased. FORBIDDEN unless you are its creator, NOT_FOUND if it is gone, CONFLICT if "
        "people kept joining or leaving while it was being deleted."
    )
    async def delete_room(self, info: Info, name: str) -> bool:
        context = context_of(info)
        viewer = await context.require_viewer()
        return await service(context).delete(viewer, rules.room_name(name))

    @strawberry.mutation(description="Post in a room you are in. FORBIDDEN unless you are a participant.")
    async def post_room_message(self, info: Info, room: str, content: str) -> RoomMessage:
        context = context_of(info)
        viewer = await context.require_viewer()
        message, record = await service(context).post(
            viewer, rules.room_name(room, "room"), rules.content(content)
        )
        return RoomMessage.of(message, Room.of(record))


@strawberry.type
class RoomSubscription:
    @strawberry.subscription(
        description="Messages of a room as they are posted, system messages included. Participants "
        "only. Ends after the viewer leaves the room, and after the last system message when the "
        "room is deleted."
    )
    async def room_messages(self, info: Info, room: str) -> AsyncGenerator[RoomMessage, None]:
        context = context_of(info)
        name = rules.room_name(room, "room")
        # Registered before any await, so nothing posted during the checks is missed.
        async with context.pubsub.subscribe(room_channel(name)) as events:
            viewer = await context.require_viewer()
            record = await context.store(RoomStore).get(name)
            if record is None:
                raise NotFound(f"No room '{name}'.", field="room")
            if viewer not in record.participants:
                raise Forbidden(f"Join '{name}' to follow its messages.", field="room")
            async for event in events:
                if not isinstance(event, RoomEvent) or event.room.id != record.id:
                    continue
                context.fresh()
                yield RoomMessage.of(event.message, Room.of(event.room))
                if event.ends_subscription_of(viewer):
                    return


@strawberry.type
class RoomUser:
    """``User.rooms``, joined onto ``User`` at the composition root."""

    login: strawberry.Private[str]

    @strawberry.field(
        description="The rooms this user is in, by name. Rooms that no longer exist are never listed."
    )
    async def rooms(self, info: Info) -> list[Room]:
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
