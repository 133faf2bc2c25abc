"""The rooms domain's root fields: ``Query.room`` and ``Query.rooms``, ``User.rooms``, the
room mutations and the live ``roomMessages`` subscription.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from functools import partial
from typing import Annotated
from uuid import UUID

import strawberry
from strawberry.types import Info

from gateway.db.timeline import REPLAY_MAX, Seam
from gateway.errors import Forbidden, NotFound
from gateway.graph.context import Context, context_of
from gateway.graph.live import Recheck, Verdict
from gateway.graph.pagination import After, Connection, First, page_size, resume_point
from gateway.ratelimit.policy import Limit
from gateway.rooms import rules
from gateway.rooms.cursors import decode_scan_cursor, decode_user_room_cursor, scan_cursor, user_room_cursor
from gateway.rooms.events import RoomEvent, RoomEventKind, room_channel
from gateway.rooms.history_store import RoomHistory
from gateway.rooms.loaders import user_rooms_loader
from gateway.rooms.member_store import MemberStore
from gateway.rooms.service import RoomService
from gateway.rooms.store import RoomStore
from gateway.rooms.types import Room, RoomMessage, room_node
from gateway.users.store import UserStore
from gateway.users.types import User

ROOMS_PAGE = 20
USER_ROOMS_PAGE = 20


#: A room named by an argument.
RoomName = Annotated[
    str, strawberry.argument(description="The room's name, exactly: names are case-sensitive.")
]


def service(context: Context) -> RoomService:
    return RoomService(
        context.db,
        context.store(RoomStore),
        context.store(MemberStore),
        context.store(RoomHistory),
        context.pubsub,
        context.store(UserStore),
    )


@strawberry.type
class RoomQuery:
    @strawberry.field(description="A room by name; null when there is none.")
    async def room(self, info: Info, name: RoomName) -> Room | None:
        return await room_node(info, name)

    @strawberry.field(
        description="Every room, in the table's storage order (not alphabetical). Rooms created "
        "or deleted while paging never shift a page."
    )
    async def rooms(self, info: Info, first: First = ROOMS_PAGE, after: After = None) -> Connection[Room]:
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
        description="Create a room and join it as its creator. CONFLICT when the name is taken or you "
        "are in as many rooms as allowed."
    )
    async def create_room(
        self,
        info: Info,
        name: Annotated[
            str,
            strawberry.argument(
                description="3-31 characters: a letter or digit, then letters, digits, `_`, `.` or `-`. "
                "Kept as given (case-sensitive, not trimmed)."
            ),
        ],
        banner: Annotated[
            str | None,
            strawberry.argument(
                description="A line shown with the room: at most 200 characters; empty is none."
            ),
        ] = None,
    ) -> Room:
        context = context_of(info)
        viewer = await context.require_viewer()
        record = await service(context).create(viewer, rules.room_name(name), rules.banner(banner))
        return Room.of(record)

    @strawberry.mutation(
        description="Join a room; joining twice is harmless. NOT_FOUND if it is gone, CONFLICT if it "
        "is full or you are in as many rooms as allowed."
    )
    async def join_room(self, info: Info, name: RoomName) -> Room:
        context = context_of(info)
        viewer = await context.require_viewer()
        return Room.of(await service(context).join(viewer, rules.room_name(name)))

    @strawberry.mutation(
        description="Leave a room; false when you were not in it. The room's subscribers see a system "
        "message, and your own roomMessages subscription to it ends."
    )
    async def leave_room(self, info: Info, name: RoomName) -> bool:
        context = context_of(info)
        viewer = await context.require_viewer()
        return await service(context).leave(viewer, rules.room_name(name))

    @strawberry.mutation(
        description="Delete a room you created: it leaves every participant's rooms and its history "
        "is erased. FORBIDDEN unless you are its creator, NOT_FOUND if it is gone."
    )
    async def delete_room(self, info: Info, name: RoomName) -> bool:
        context = context_of(info)
        viewer = await context.require_viewer()
        return await service(context).delete(viewer, rules.room_name(name))

    @strawberry.mutation(
        description="Post in a room you are in: its roomMessages subscribers receive it. FORBIDDEN "
        "unless you are a participant, NOT_FOUND if the room is gone. Rate limited."
    )
    async def post_room_message(
        self,
        info: Info,
        room: RoomName,
        content: Annotated[str, strawberry.argument(description="1-4000 characters after trimming.")],
        client_mutation_id: Annotated[
            str | None,
            strawberry.argument(
                description="An idempotency key you generate (a UUID; at most 100 characters): a retry "
                "with the same key stores no second message and returns the first."
            ),
        ] = None,
    ) -> RoomMessage:
        context = context_of(info)
        client_key = context.idempotency_key(info, client_mutation_id)
        viewer = await context.require_viewer()
        name, text = rules.room_name(room, "room"), rules.content(content)
        await context.rate_limit(Limit.SEND, viewer)
        message, record, author = await service(context).post(viewer, name, text, client_key)
        return RoomMessage.of(message, Room.of(record), None if author is None else {viewer: User.of(author)})


@strawberry.type
class RoomSubscription:
    @strawberry.subscription(
        description="Messages of a room as they are posted, system messages included. Participants "
        "only. Ends after the viewer leaves the room, and after the last system message when the "
        "room is deleted."
    )
    async def room_messages(
        self,
        info: Info,
        room: RoomName,
        after: Annotated[
            str | None,
            strawberry.argument(
                description="A message of the room you hold: its `id`, or the cursor of its edge in "
                "`room.messages`. The messages stored after it come first, oldest first (at most "
                f"{REPLAY_MAX}; past that, `BAD_USER_INPUT` on `after`: page with `last`/`before`), "
                "then live, with no gap and no repeat at the seam."
            ),
        ] = None,
    ) -> AsyncGenerator[RoomMessage, None]:
        context = context_of(info)
        name = rules.room_name(room, "room")
        point = None if after is None else resume_point(after, "RoomMessage")
        # Registered before any await, so nothing posted during the checks is missed.
        async with context.live.follow(room_channel(name)) as follow:
            viewer = await context.require_viewer()
            record = await context.store(RoomStore).get(name)
            if record is None:
                raise NotFound(f"No room '{name}'.", field="room")
            if not await context.store(MemberStore).is_participant(record.id, viewer):
                raise Forbidden(f"Join '{name}' to follow its messages.", field="room")
            replay: list[RoomEvent] = []
            newer = None
            if point is not None:
                replay, seam = await service(context).replay(record, point)
                newer = partial(_past_seam, seam)
            await follow.go_live(
                partial(_room_verdict, record.id.int, viewer),
                _room_message,
                viewer=viewer,
                token=context.token,
                newer=newer,
                replay=replay,
                recheck=_membership(context, record.name, record.id),
            )
            async for message in follow.events():
                yield message


def _past_seam(seam: Seam, event: object) -> bool:
    return isinstance(event, RoomEvent) and seam.newer(event.message.id)


def _room_verdict(room_id: int, viewer: str, event: object) -> Verdict:
    """Who receives a room's event is known before it arrives: the participant who
    subscribed, until their own leave or the room's deletion (delivered, then the end),
    or another incarnation of the name (this room is gone: the end). A leave or deletion
    lost with the broker's connection ends the subscription with the connection; one the
    broker dropped otherwise is found by the recheck (:func:`_membership`).

    ``room_id`` is the room's id as an integer: asked once per subscriber and event, the
    comparison stays in C (``UUID.__eq__`` is Python)."""
    if not isinstance(event, RoomEvent):
        return Verdict.SKIP
    if event.room.id.int != room_id:
        return Verdict.END
    if event.kind is RoomEventKind.MESSAGE:
        return Verdict.DELIVER
    return Verdict.DELIVER_THEN_END if event.ends_subscription_of(viewer) else Verdict.DELIVER


def _membership(context: Context, name: str, room_id: UUID) -> Recheck:
    """Who of a room's subscribers is still in it, asked again now and then: a leave or a
    deletion whose event the broker lost ends their subscriptions all the same."""
    rooms, members = context.store(RoomStore), context.store(MemberStore)
    return Recheck(("room", room_id), partial(_still_in_room, rooms, members, name, room_id))


async def _still_in_room(
    rooms: RoomStore, members: MemberStore, name: str, room_id: UUID, viewers: frozenset[str]
) -> set[str]:
    room = await rooms.get(name)
    if room is None or room.id != room_id:
        return set()
    return await members.participants_among(room_id, viewers)


def _room_message(event: RoomEvent) -> RoomMessage:
    author = event.author
    authors = None if author is None else {author.login: User.of_profile(author)}
    return RoomMessage.of(event.message, Room.of(event.room), authors)


@strawberry.type
class RoomUser:
    """``User.rooms``, joined onto ``User`` at the composition root."""

    login: strawberry.Private[str]

    @strawberry.field(
        description="The rooms this user is in, by name. Rooms that no longer exist are never listed "
        "(a page may then hold fewer than `first` rooms)."
    )
    async def rooms(
        self, info: Info, first: First = USER_ROOMS_PAGE, after: After = None
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
