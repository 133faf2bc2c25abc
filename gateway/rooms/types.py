"""The rooms domain's object types: ``Room`` (with its participants and messages) and
``RoomMessage``; ``room_node`` finds a room by name for ``Query.room`` and ``Query.node``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from datetime import datetime
from typing import Any, cast
from uuid import UUID

import strawberry
from strawberry.types import Info

from gateway.errors import BadUserInput, Forbidden
from gateway.graph.context import context_of
from gateway.graph.cost import text_bound
from gateway.graph.live import viewer_dependent
from gateway.graph.node import ID_DESCRIPTION, Node, global_id
from gateway.graph.pagination import (
    After,
    Before,
    Connection,
    First,
    Last,
    decode_position,
    page_request,
    page_size,
    position_cursor,
)
from gateway.graph.plain_fields import NOT_READ, computed_field, plain_reader, source_field
from gateway.graph.selection import selects
from gateway.rooms import rules
from gateway.rooms.cursors import decode_login_cursor, login_cursor
from gateway.rooms.history_store import RoomHistory
from gateway.rooms.loaders import participant_count_loader, room_loader
from gateway.rooms.member_store import MemberStore
from gateway.rooms.records import RoomMessageRecord, RoomRecord
from gateway.users.types import Prefetched, User, prefetched_user_field, users_by_login

PARTICIPANTS_PAGE = 50
MESSAGES_PAGE = 50


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
    name: str = strawberry.field(
        description="Unique and case-sensitive: 3-31 characters, a letter or digit, then letters, "
        "digits, `_`, `.` or `-`. What arguments name the room by."
    )
    banner: str | None = strawberry.field(
        description="A line its creator shows with the room (at most 200 characters); null when none."
    )
    created_at: datetime = strawberry.field(description="When the room was created.")
    creator: User | Awaitable[User] = prefetched_user_field(
        lambda r: r._record.creator_login, description="Who created it: the only one who may delete it."
    )
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
        self, info: Info, first: First = PARTICIPANTS_PAGE, after: After = None
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
        "signed out. Includes system messages (joins, leaves).",
        metadata=viewer_dependent(),
    )
    async def messages(
        self,
        info: Info,
        first: First = MESSAGES_PAGE,
        after: After = None,
        last: Last = None,
        before: Before = None,
    ) -> Connection[RoomMessage] | None:
        context = context_of(info)
        request = page_request(info, first, after, last, before, MESSAGES_PAGE)
        position = decode_position(request.cursor, request.cursor_field)
        viewer = await context.require_viewer()
        if not await context.store(MemberStore).is_participant(self._record.id, viewer):
            raise Forbidden(f"Join '{self.name}' to read its messages.")
        page = await context.store(RoomHistory).page(
            self.name, self._record.id, size=request.size, cursor=position, backward=request.backward
        )
        authors = None
        if selects(info, "author"):
            authors = await users_by_login(info, (m.author_login for _, m in page.items if m.author_login))
        room = Room.of(self._record)
        edges = [
            (position_cursor(pos), RoomMessage.of(message, room, authors)) for pos, message in page.items
        ]
        return Connection.paged(request, edges, page.more, page.beyond)


def _room_message_id(self: RoomMessage) -> strawberry.ID:
    record = self._record
    return global_id("RoomMessage", record.room_name, str(record.room_id), str(record.id))


@strawberry.type(description="A message in a room; system messages (joins, leaves) have no author.")
class RoomMessage(Node):
    """Fields are read from the stored message when the query selects them, and resolve
    on the plain-fields path."""

    _record: strawberry.Private[RoomMessageRecord]
    id: strawberry.ID = computed_field(_room_message_id, description=ID_DESCRIPTION)
    content: str = source_field(
        "_record.content",
        description="The text (1-4000 characters); for a system message, what happened "
        '("alice joins the room").',
        metadata=text_bound(rules.CONTENT_MAX),
    )
    system_message: bool = source_field(
        "_record.system_message",
        description="True for what the room itself tells: its creation, a join, a leave, its deletion.",
    )
    posted_at: datetime = source_field(
        "_record.posted_at", description="When it was posted; a room's history is ordered by it."
    )
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


async def room_message_node(info: Info, name: str, room_id: str, message_id: str) -> RoomMessage | None:
    """``node``'s lookup of a ``RoomMessage`` global id: for the room's participants, while
    the room is the one the message was posted in (not a later room of the same name)."""
    try:
        room_key, message_key = UUID(room_id), UUID(message_id)
    except ValueError:
        return None
    context = context_of(info)
    room = await room_node(info, name)
    viewer = await context.viewer()
    if room is None or viewer is None or room._record.id != room_key or message_key.version != 1:
        return None
    if not await context.store(MemberStore).is_participant(room_key, viewer):
        return None
    record = await context.store(RoomHistory).message(name, room_key, message_key)
    return RoomMessage.of(record, room) if record is not None else None
