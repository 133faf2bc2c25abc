"""Chat rooms: types, queries, mutations and the live room subscription."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Mapping
from datetime import datetime
from typing import Any, cast
from uuid import UUID

import strawberry
from strawberry.types import Info

from gateway.errors import BadUserInput, Forbidden, NotFound
from gateway.graph.context import Context, context_of
from gateway.graph.cost import text_bound
from gateway.graph.node import ID_DESCRIPTION, Node, global_id
from gateway.graph.pagination import (
    Connection,
    decode_position,
    page_size,
    position_cursor,
)
from gateway.graph.plain_fields import NOT_READ, computed_field, plain_reader, source_field
from gateway.graph.selection import selects
from gateway.ratelimit.policy import Limit
from gateway.rooms import rules
from gateway.rooms.cursors import (
    decode_login_cursor,
    decode_scan_cursor,
    decode_user_room_cursor,
    login_cursor,
    scan_cursor,
    user_room_cursor,
)
from gateway.rooms.events import RoomEvent, room_channel
from gateway.rooms.history import RoomHistory, RoomMessageRecord
from gateway.rooms.loaders import participant_count_loader, room_loader, user_rooms_loader
from gateway.rooms.members import MemberStore
from gateway.rooms.service import RoomService
from gateway.rooms.store import RoomRecord, RoomStore
from gateway.users.types import Prefetched, User, prefetched_user_field, users_by_login

ROOMS_PAGE = 20
USER_ROOMS_PAGE = 20
PARTICIPANTS_PAGE = 50
MESSAGES_PAGE = 50


def service(context: Context) -> RoomService:
    return RoomService(
        context.db,
        context.store(RoomStore),
        context.store(MemberStore),
        context.store(RoomHistory),
        context.pubsub,
    )


#: Participant counts by room id, loaded for a list's rooms; None: not loaded.
Counts = Mapping[UUID, int] | None


def _room_id(self: Room) -> strawberry.ID:
    return global_id("Room", self._record.name)


def _read_participant_count(room: Room) -> Any:
    """The count ``list_of`` loaded with its page, else ``NOT_READ``."""
    counts = room._counts
    return counts[room._record.id] if counts is not None else NOT_READ


@strawberry.type(description="A chat room. Anyone may see rooms and who is in them.")
class Room(Node):
    """Fields known from the record are filled at construction: plain attributes resolve
    on the plain-fields path. A list's creators and participant counts are loaded with
    the list (``list_of``), so its rooms need no awaitable each."""

    def _participant_count(self, info: Info) -> int | Awaitable[int]:
        count = _read_participant_count(self)
        if count is not NOT_READ:
            return cast(int, count)
        return context_of(info).loader(participant_count_loader).load(self._record.id)

    id: strawberry.ID = computed_field(_room_id, description=ID_DESCRIPTION)
    name: str
    banner: str | None
    created_at: datetime
    creator: User | Awaitable[User] = prefetched_user_field(lambda r: r._record.creator_login)
    participant_count: int | Awaitable[int] = strawberry.field(
        resolver=_participant_count,
        graphql_type=int,
        description="How many users are in the room.",
        metadata=plain_reader(_read_participant_count),
    )
    _record: strawberry.Private[RoomRecord]
    #: Users prefetched by ``list_of``.
    _users: strawberry.Private[Prefetched] = None
    #: Participant counts prefetched by ``list_of``.
    _counts: strawberry.Private[Counts] = None

    @classmethod
    def of(cls, record: RoomRecord, users: Prefetched = None, counts: Counts = None) -> Room:
        return cls(
            name=record.name,
            banner=record.banner,
            created_at=record.created_at,
            _record=record,
            _users=users,
            _counts=counts,
        )

    @classmethod
    async def list_of(cls, info: Info, records: list[RoomRecord]) -> list[Room]:
        """Rooms of a list, with the creators and participant counts the query selects
        loaded in one batch each (both batches go out together)."""
        counting = None
        if records and selects(info, "participantCount"):
            ids = [record.id for record in records]
            counting = context_of(info).loader(participant_count_loader).load_many(ids)
        users = None
        if selects(info, "creator"):
            users = await users_by_login(info, (r.creator_login for r in records))
        counts = dict(zip(ids, await counting, strict=True)) if counting is not None else None
        return [cls.of(record, users, counts) for record in records]

    @strawberry.field(description="Who is in the room, ordered by login.")
    async def participants(
        self, info: Info, first: int | None = PARTICIPANTS_PAGE, after: str | None = None
    ) -> Connection[User]:
        size = page_size(info, first, PARTICIPANTS_PAGE)
        start = decode_login_cursor(after)
        if size == 0:
            return Connection.empty()
        page = await context_of(info).store(MemberStore).participants(self._record.id, size, start)
        users = await users_by_login(info, page.items) if page.items else {}
        return Connection.of(
            [(login_cursor(login), users[login]) for login in page.items if login in users],
            page.has_next,
        )

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
        if not await context.store(MemberStore).is_participant(self._record.id, viewer):
            raise Forbidden(f"Join '{self.name}' to read its messages.")
        page = await context.store(RoomHistory).page(self.name, self._record.id, first=size, after=position)
        authors = None
        if selects(info, "author"):
            authors = await users_by_login(info, (m.author_login for _, m in page.items if m.author_login))
        room = Room.of(self._record)
        return Connection.of(
            [(position_cursor(pos), RoomMessage.of(message, room, authors)) for pos, message in page.items],
            page.has_next,
        )


@strawberry.type(description="A message in a room; system messages (joins, leaves) have no author.")
class RoomMessage:
    """Fields are read from the stored message when the query selects them, and resolve
    on the plain-fields path."""

    _record: strawberry.Private[RoomMessageRecord]
    id: strawberry.ID = source_field("_record.id", str)
    content: str = source_field("_record.content", metadata=text_bound(rules.CONTENT_MAX))
    system_message: bool = source_field("_record.system_message")
    posted_at: datetime = source_field("_record.posted_at")
    room: Room = strawberry.field(description="The room as it stood when the message was read or delivered.")
    author: User | Awaitable[User | None] | None = prefetched_user_field(
        lambda m: m._record.author_login,
        users="_authors",
        optional=True,
        description="Null for system messages.",
    )
    #: Authors prefetched by the page resolver; None: not prefetched.
    _authors: strawberry.Private[Prefetched] = None

    @classmethod
    def of(cls, record: RoomMessageRecord, room: Room, authors: Prefetched = None) -> RoomMessage:
        return cls(_record=record, room=room, _authors=authors)


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
        description="Every room, in the table's storage order (not alphabetical). Rooms created "
        "or deleted while paging never shift a page."
    )
    async def rooms(
        self, info: Info, first: int | None = ROOMS_PAGE, after: str | None = None
    ) -> Connection[Room]:
        size = page_size(info, first, ROOMS_PAGE)
        start = decode_scan_cursor(after)
        if size == 0:
            return Connection.empty()
        page = await context_of(info).store(RoomStore).scan(size, start)
        found = [record for _, record in page.rooms if record is not None]
        rooms = await Room.list_of(info, found)
        return Connection.of([(scan_cursor(room.name), room) for room in rooms], page.has_next)


@strawberry.type
class RoomMutation:
    @strawberry.mutation(
        description="Create a room and join it. CONFLICT when the name is taken or you are in as "
        "many rooms as allowed."
    )
    async def create_room(self, info: Info, name: str, banner: str | None = None) -> Room:
        context = context_of(info)
        viewer = await context.require_viewer()
        record = await service(context).create(viewer, rules.room_name(name), rules.banner(banner))
        return Room.of(record)

    @strawberry.mutation(
        description="Join a room; joining twice is harmless. NOT_FOUND if it is gone, CONFLICT if it "
        "is full or you are in as many rooms as allowed."
    )
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
        "is erased. FORBIDDEN unless you are its creator, NOT_FOUND if it is gone."
    )
    async def delete_room(self, info: Info, name: str) -> bool:
        context = context_of(info)
        viewer = await context.require_viewer()
        return await service(context).delete(viewer, rules.room_name(name))

    @strawberry.mutation(
        description="Post in a room you are in. FORBIDDEN unless you are a participant. "
        "`clientMutationId` is an idempotency key you generate (a UUID): a retry with the same key "
        "stores no second message and returns the first."
    )
    async def post_room_message(
        self, info: Info, room: str, content: str, client_mutation_id: str | None = None
    ) -> RoomMessage:
        context = context_of(info)
        client_key = context.idempotency_key(info, client_mutation_id)
        viewer = await context.require_viewer()
        name, text = rules.room_name(room, "room"), rules.content(content)
        await context.rate_limit(Limit.SEND, viewer)
        message, record = await service(context).post(viewer, name, text, client_key)
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
            members = context.store(MemberStore)
            if not await members.is_participant(record.id, viewer):
                raise Forbidden(f"Join '{name}' to follow its messages.", field="room")
            async for event in events:
                if not isinstance(event, RoomEvent):
                    continue
                # Another incarnation of the name means this room was deleted. For this one,
                # a leave or deletion whose own event never reached this process (another
                # gateway, a lost broker message) shows in the participant row, read before
                # every delivery but the viewer's last (their own leave, the deletion).
                if event.room.id != record.id:
                    return
                last = event.ends_subscription_of(viewer)
                if not last and not await members.is_participant(record.id, viewer):
                    return
                context.fresh()
                yield RoomMessage.of(event.message, Room.of(event.room))
                if last:
                    return


@strawberry.type
class RoomUser:
    """``User.rooms``, joined onto ``User`` at the composition root."""

    login: strawberry.Private[str]

    @strawberry.field(
        description="The rooms this user is in, by name. Rooms that no longer exist are never listed "
        "(a page may then hold fewer than `first` rooms)."
    )
    async def rooms(
        self, info: Info, first: int | None = USER_ROOMS_PAGE, after: str | None = None
    ) -> Connection[Room]:
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
