"""The room life cycle: create, join, leave, delete, post, each announced to subscribers.

The acting login is always the caller's authenticated user. Every step that
touches several partitions is ordered so that an interruption leaves only what
readers skip and repair (see ``gateway.rooms.member_store`` for the order of writes
and why a join racing a deletion leaves no member listing a dead room).
"""

from __future__ import annotations

import asyncio
import random
from uuid import UUID

from gateway.broker.pubsub import PubSub
from gateway.db import clock
from gateway.db.clock import new_timeuuid
from gateway.db.idempotency import MutationKeys
from gateway.db.lwt import compare_and_set
from gateway.db.session import CassandraUnavailable, ContentionExhausted, Database
from gateway.db.timeline import REPLAY_MAX, Seam
from gateway.errors import BadUserInput, Conflict, Forbidden, GatewayError, NotFound
from gateway.rooms.events import RoomEvent, RoomEventKind, room_channel
from gateway.rooms.history_store import RoomHistory
from gateway.rooms.member_store import MemberStore
from gateway.rooms.records import RoomMessageRecord, RoomRecord, UserRoom
from gateway.rooms.store import RoomStore
from gateway.users.records import UserProfile, UserRecord
from gateway.users.store import UserStore

#: Conditional-delete attempts before answering CONFLICT. An attempt loses only
#: when the room was deleted and created again between our read and our
#: delete (its participants are no longer part of the condition).
DELETE_ATTEMPTS = 3
#: Attempts of a join that found a bound exceeded only because of joins racing it.
#: Each lost attempt undoes its writes and waits a jittered, doubling delay, so
#: racers for the last places spread out instead of all undoing together.
ADMIT_ATTEMPTS = 6
ADMIT_BASE_DELAY = 0.01


def joins_text(login: str) -> str:
    return f"{login} joins the room"


def leaves_text(login: str) -> str:
    return f"{login} leaves the room"


def created_text(login: str) -> str:
    return f"{login} created the room"


def deleted_text(login: str) -> str:
    return f"{login} deleted the room"


class RoomService:
    def __init__(
        self,
        db: Database,
        rooms: RoomStore,
        members: MemberStore,
        history: RoomHistory,
        pubsub: PubSub,
        users: UserStore,
    ) -> None:
        self.db = db
        self.rooms = rooms
        self.users = users
        self.members = members
        self.history = history
        self.pubsub = pubsub
        self.max_participants = rooms.settings.room_max_participants
        self.max_rooms = rooms.settings.rooms_per_user_max
        self.keys = MutationKeys(db)

    async def create(self, viewer: str, name: str, banner: str | None) -> RoomRecord:
        """CONFLICT when the name is taken, or when the creator is in as many rooms as
        allowed (then the new room is deleted again); the creator is the first participant."""
        room = RoomRecord(
            name=name, id=new_timeuuid(), creator_login=viewer, created_at=clock.now(), banner=banner
        )
        if not await self.rooms.create(room):
            raise Conflict(f"The room name '{name}' is taken.", field="name")
        try:
            await self._admit(room, viewer)
        except GatewayError:
            if (await self.rooms.delete(room, viewer)).applied:
                await self.members.forget_room(room.id, name)
            raise
        await self._announce(RoomEventKind.CREATED, room, viewer, created_text(viewer))
        return room

    async def join(self, viewer: str, name: str) -> RoomRecord:
        """NOT_FOUND when the room is gone, CONFLICT when it is full or the viewer is in
        as many rooms as allowed. Joining a room one is in changes nothing but
        re-writes the viewer's membership row (repairing one lost by an interruption)."""
        room = await self.rooms.get(name)
        if room is None:
            raise NotFound(f"No room '{name}'.", field="name")
        if await self._admit(room, viewer):
            await self._announce(RoomEventKind.JOINED, room, viewer, joins_text(viewer))
        return room

    async def _admit(self, room: RoomRecord, login: str) -> bool:
        """Make ``login`` a participant; True when this call did (False: already one).

        Writes first, then checks (the room still there, both bounds) and undoes
        its writes when a check fails: the order that makes the checks exact
        under concurrency (``gateway.rooms.member_store``). A full room, or a user at
        the cap, is refused before any write; a bound found exceeded after the
        write may be joins racing this one, so the join is tried again (bounded:
        ``ADMIT_ATTEMPTS``), each time refused at once if the bound is reached.
        """
        membership = UserRoom(login, room.name, room.id)
        delay = ADMIT_BASE_DELAY
        for attempt in range(ADMIT_ATTEMPTS):
            if await self.members.count(room.id) >= self.max_participants and not (
                await self.members.is_participant(room.id, login)
            ):
                raise self._full(room)
            if attempt and await self.members.rooms_of_count(login, self.max_rooms + 1) >= self.max_rooms:
                raise self._too_many_rooms()
            joined_at = clock.now()
            if not await self.members.add(room.id, login, joined_at):
                await self.members.record(membership, joined_at)
                return False
            await asyncio.gather(
                self.members.record(membership, joined_at), self.members.count_by(room.id, 1)
            )
            count, rooms_of_user, current = await asyncio.gather(
                self.members.count(room.id),
                self.members.rooms_of_count(login, self.max_rooms + 1),
                self.rooms.get(room.name),
            )
            if (
                current is not None
                and current.id == room.id
                and count <= self.max_participants
                and (rooms_of_user <= self.max_rooms)
            ):
                return True
            await self._withdraw(membership)
            if current is None or current.id != room.id:
                raise NotFound(f"No room '{room.name}'.", field="name")
            if attempt + 1 == ADMIT_ATTEMPTS:
                raise self._full(room) if count > self.max_participants else self._too_many_rooms()
            self.db.count_lwt_retry()
            await asyncio.sleep(random.uniform(0, delay))
            delay *= 2
        raise AssertionError("unreachable")

    def _too_many_rooms(self) -> Conflict:
        return Conflict(
            f"You are in {self.max_rooms} rooms, the most allowed; leave one before joining another.",
            field="name",
        )

    def _full(self, room: RoomRecord) -> Conflict:
        return Conflict(
            f"The room '{room.name}' is full ({self.max_participants} participants); "
            "try again when someone leaves.",
            field="name",
        )

    async def _withdraw(self, membership: UserRoom) -> bool:
        """End a membership: the user's row first, then the participant row (the order
        that never leaves a user listing a room they are not in). True when this
        call ended it."""
        await self.members.forget(membership)
        if await self.members.remove(membership.room_id, membership.login):
            await self.members.count_by(membership.room_id, -1)
            return True
        return False

    async def leave(self, viewer: str, name: str) -> bool:
        """True when the viewer was a participant and left; False otherwise."""
        room = await self.rooms.get(name)
        if room is None:
            return False
        if not await self._withdraw(UserRoom(viewer, name, room.id)):
            return False
        await self._announce(RoomEventKind.LEFT, room, viewer, leaves_text(viewer))
        return True

    async def delete(self, viewer: str, name: str) -> bool:
        """Delete the room if the viewer created it, then clean up after it.

        An attempt whose outcome is unknown is simply sent again: finding the
        room gone then means that attempt had deleted it. Afterwards the room
        leaves every participant's rooms (read page by page from its
        participant rows) and its history is erased; that is not atomic across
        partitions, and ``User.rooms`` skips what a reader sees in between.
        """
        found = await self.rooms.get(name)
        if found is None:
            raise NotFound(f"No room '{name}'.", field="name")
        room: RoomRecord = found
        outcome_unknown = False

        async def attempt() -> RoomRecord | None:
            nonlocal room, outcome_unknown
            if room.creator_login != viewer:
                raise Forbidden("Only the room's creator may delete it.", field="name")
            try:
                outcome = await self.rooms.delete(room, viewer)
            except CassandraUnavailable:
                outcome_unknown = True
                return None
            if outcome.applied:
                return room
            if outcome.current is None:
                if outcome_unknown:
                    return room
                raise NotFound(f"No room '{name}'.", field="name")
            reread = await self.rooms.get(name)
            if reread is None:
                raise NotFound(f"No room '{name}'.", field="name")
            room = reread
            return None

        try:
            deleted = await compare_and_set(self.db, attempt, attempts=DELETE_ATTEMPTS, what="deleteRoom")
        except ContentionExhausted as exc:
            raise Conflict(
                f"The room '{name}' kept being replaced while it was being deleted. Try again.",
                field="name",
            ) from exc
        last_words = RoomMessageRecord(name, deleted.id, new_timeuuid(), None, deleted_text(viewer), True)
        await self.pubsub.publish(
            room_channel(name), RoomEvent(RoomEventKind.DELETED, last_words, deleted, viewer)
        )
        self.pubsub.close(room_channel(name))
        await self.members.forget_room(deleted.id, name)
        await self.history.erase(deleted.id)
        return True

    async def post(
        self, viewer: str, name: str, content: str, client_key: str | None = None
    ) -> tuple[RoomMessageRecord, RoomRecord, UserRecord | None]:
        """The message, its room and its author. NOT_FOUND when the room is gone,
        FORBIDDEN unless the viewer is a participant.

        The author is read beside the room, once per post: the event carries their
        public profile, so the room's subscribers, on every process, read nothing.

        With ``client_key`` the message id is claimed under (viewer, room
        incarnation, key) first (``gateway/db/idempotency.py``): a retry returns
        the stored message without announcing it again, or stores it under the
        claimed id when the first request never did.
        """
        room, author = await asyncio.gather(self.rooms.get(name), self.users.get(viewer))
        if room is None:
            raise NotFound(f"No room '{name}'.", field="room")
        if not await self.members.is_participant(room.id, viewer):
            raise Forbidden(f"Join '{name}' before posting in it.", field="room")
        message_id = new_timeuuid()
        if client_key is not None:
            claim = await self.keys.claim(viewer, f"postRoomMessage:{room.id}", client_key, str(message_id))
            message_id = UUID(claim.result)
            if not claim.first:
                stored = await self.history.message(room.name, room.id, message_id)
                if stored is not None:
                    return stored, room, author
        message = await self.history.append(room.name, room.id, viewer, content, message_id=message_id)
        profile = None if author is None else UserProfile.of(author)
        event = RoomEvent(RoomEventKind.MESSAGE, message, room, viewer, profile)
        await self.pubsub.publish(room_channel(name), event)
        return message, room, author

    async def replay(self, room: RoomRecord, after: UUID) -> tuple[list[RoomEvent], Seam]:
        """What ``roomMessages(after:)`` replays before it goes live: the room's messages
        stored after ``after``, oldest first, as the events that announced them (at most
        ``REPLAY_MAX``; beyond that ``BAD_USER_INPUT`` on ``after``), and its seam. A
        replayed leave or deletion is history: it ends nothing."""
        messages = await self.history.since(room.name, room.id, after, REPLAY_MAX)
        if messages is None:
            raise BadUserInput(
                "after",
                f"More than {REPLAY_MAX} messages since `after`: page `room.messages` with "
                "`last`/`before`, then subscribe from the newest.",
            )
        events = [
            RoomEvent(RoomEventKind.MESSAGE, message, room, message.author_login or "")
            for message in messages
        ]
        return events, Seam(after, [message.id for message in messages])

    async def _announce(self, kind: RoomEventKind, room: RoomRecord, login: str, text: str) -> None:
        """Store a system message in the room's history and deliver it to subscribers."""
        message = await self.history.append(room.name, room.id, None, text, system=True)
        await self.pubsub.publish(room_channel(room.name), RoomEvent(kind, message, room, login))
