"""The room life cycle: create, join, leave, delete, post, each announced to subscribers.

The acting login is always the caller's authenticated user. Every step that
touches two partitions is ordered so that an interruption leaves only what
readers repair: a membership row is written after the room's participants
set accepted the user, and removed after (or with) the user's removal.
"""

from __future__ import annotations

from dataclasses import replace
from uuid import UUID

from gateway.db import clock
from gateway.db.clock import new_timeuuid
from gateway.db.idempotency import MutationKeys
from gateway.db.lwt import compare_and_set
from gateway.db.session import CassandraUnavailable, ContentionExhausted, Database
from gateway.errors import Conflict, Forbidden, NotFound
from gateway.graph.pubsub import PubSub
from gateway.rooms.events import RoomEvent, RoomEventKind, room_channel
from gateway.rooms.history import RoomHistory, RoomMessageRecord
from gateway.rooms.store import RoomRecord, RoomStore

#: Conditional-delete attempts before answering CONFLICT. Each lost attempt is
#: a join or leave that landed between our read and our delete; the failed
#: attempt returns the new participants, so the next one is usually final.
#: Jittered back-off (see ``gateway.db.lwt``) keeps the total well under a second.
DELETE_ATTEMPTS = 8


def joins_text(login: str) -> str:
    return f"{login} joins the room"


def leaves_text(login: str) -> str:
    return f"{login} leaves the room"


def created_text(login: str) -> str:
    return f"{login} created the room"


def deleted_text(login: str) -> str:
    return f"{login} deleted the room"


class RoomService:
    def __init__(self, db: Database, rooms: RoomStore, history: RoomHistory, pubsub: PubSub) -> None:
        self.db = db
        self.rooms = rooms
        self.history = history
        self.pubsub = pubsub
        self.keys = MutationKeys(db)

    async def create(self, viewer: str, name: str, banner: str | None) -> RoomRecord:
        """CONFLICT when the name is taken; the creator is the first participant."""
        room = RoomRecord(
            name=name,
            id=new_timeuuid(),
            creator_login=viewer,
            created_at=clock.now(),
            banner=banner,
            participants=frozenset({viewer}),
        )
        if not await self.rooms.create(room):
            raise Conflict(f"The room name '{name}' is taken.", field="name")
        await self.rooms.record_membership(viewer, name, room.created_at)
        await self._announce(RoomEventKind.CREATED, room, viewer, created_text(viewer))
        return room

    async def join(self, viewer: str, name: str) -> RoomRecord:
        """NOT_FOUND when the room is gone. Joining a room one is in changes nothing
        but re-writes the membership row (repairing one lost by an interruption)."""
        room = await self.rooms.get(name)
        if room is None:
            raise NotFound(f"No room '{name}'.", field="name")
        if viewer in room.participants:
            await self.rooms.record_membership(viewer, name, clock.now())
            return room
        if not await self.rooms.add_participant(name, viewer):
            raise NotFound(f"No room '{name}'.", field="name")
        await self.rooms.record_membership(viewer, name, clock.now())
        joined = replace(room, participants=room.participants | {viewer})
        await self._announce(RoomEventKind.JOINED, joined, viewer, joins_text(viewer))
        return joined

    async def leave(self, viewer: str, name: str) -> bool:
        """True when the viewer was a participant and left; False otherwise. A missing
        room still loses its stale entry from the viewer's rooms."""
        room = await self.rooms.get(name)
        if room is None:
            await self.rooms.forget_membership(viewer, name)
            return False
        await self.rooms.leave(name, viewer)
        if viewer not in room.participants:
            return False
        left = replace(room, participants=room.participants - {viewer})
        await self._announce(RoomEventKind.LEFT, left, viewer, leaves_text(viewer))
        return True

    async def delete(self, viewer: str, name: str) -> bool:
        """Delete the room if the viewer created it, then clean up after it.

        The conditional delete is retried with the participants Cassandra
        returns when it loses (bounded: ``DELETE_ATTEMPTS``, then CONFLICT). An
        attempt whose outcome is unknown is simply sent again: finding the room
        gone then means that attempt had deleted it. Afterwards the room leaves
        every participant's rooms and its history is erased; that is not atomic
        across partitions, and ``User.rooms`` skips and repairs what a reader
        sees in between.
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
                outcome = await self.rooms.delete_if_unchanged(room, viewer)
            except CassandraUnavailable:
                outcome_unknown = True
                return None
            if outcome.applied:
                return room
            if outcome.current is None:
                if outcome_unknown:
                    return room
                raise NotFound(f"No room '{name}'.", field="name")
            if outcome.current.id != room.id:
                reread = await self.rooms.get(name)
                if reread is None:
                    raise NotFound(f"No room '{name}'.", field="name")
                room = reread
            else:
                room = outcome.current
            return None

        try:
            deleted = await compare_and_set(self.db, attempt, attempts=DELETE_ATTEMPTS, what="deleteRoom")
        except ContentionExhausted as exc:
            raise Conflict(
                f"The participants of '{name}' kept changing; the room was not deleted. Try again.",
                field="name",
            ) from exc
        last_words = RoomMessageRecord(name, deleted.id, new_timeuuid(), None, deleted_text(viewer), True)
        await self.pubsub.publish(
            room_channel(name), RoomEvent(RoomEventKind.DELETED, last_words, deleted, viewer)
        )
        self.pubsub.close(room_channel(name))
        await self.rooms.forget_memberships(name, deleted.participants | {viewer})
        await self.history.erase(deleted.id)
        return True

    async def post(
        self, viewer: str, name: str, content: str, client_key: str | None = None
    ) -> tuple[RoomMessageRecord, RoomRecord]:
        """NOT_FOUND when the room is gone, FORBIDDEN unless the viewer is a participant.

        With ``client_key`` the message id is claimed under (viewer, room
        incarnation, key) first (``gateway/db/idempotency.py``): a retry returns
        the stored message without announcing it again, or stores it under the
        claimed id when the first request never did.
        """
        room = await self.rooms.get(name)
        if room is None:
            raise NotFound(f"No room '{name}'.", field="room")
        if viewer not in room.participants:
            raise Forbidden(f"Join '{name}' before posting in it.", field="room")
        message_id = new_timeuuid()
        if client_key is not None:
            claim = await self.keys.claim(viewer, f"postRoomMessage:{room.id}", client_key, str(message_id))
            message_id = UUID(claim.result)
            if not claim.first:
                stored = await self.history.message(room.name, room.id, message_id)
                if stored is not None:
                    return stored, room
        message = await self.history.append(room.name, room.id, viewer, content, message_id=message_id)
        await self.pubsub.publish(room_channel(name), RoomEvent(RoomEventKind.MESSAGE, message, room, viewer))
        return message, room

    async def _announce(self, kind: RoomEventKind, room: RoomRecord, login: str, text: str) -> None:
        """Store a system message in the room's history and deliver it to subscribers."""
        message = await self.history.append(room.name, room.id, None, text, system=True)
        await self.pubsub.publish(room_channel(room.name), RoomEvent(kind, message, room, login))
