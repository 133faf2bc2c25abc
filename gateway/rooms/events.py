"""What a room's subscribers receive, on one publish/subscribe channel per room."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from gateway.rooms.history import RoomMessageRecord
from gateway.rooms.store import RoomRecord


class RoomEventKind(Enum):
    MESSAGE = "message"
    CREATED = "created"
    JOINED = "joined"
    LEFT = "left"
    DELETED = "deleted"


@dataclass(frozen=True)
class RoomEvent:
    """A message of the room (a system message for everything but ``MESSAGE``),
    with the room as it stands right after the event and who caused it."""

    kind: RoomEventKind
    message: RoomMessageRecord
    room: RoomRecord
    login: str

    def ends_subscription_of(self, viewer: str) -> bool:
        """Whether ``viewer``'s subscription ends after this event: when the room is
        deleted, and when the viewer leaves (subscriptions are for participants)."""
        return self.kind is RoomEventKind.DELETED or (
            self.kind is RoomEventKind.LEFT and self.login == viewer
        )


    def reaches(self, viewer: str) -> bool:
        """Whether the room as it stands after this event still has ``viewer`` in it;
        their own leave and the deletion reach them too (as the last event)."""
        return (
            self.kind is RoomEventKind.DELETED
            or (self.kind is RoomEventKind.LEFT and self.login == viewer)
            or viewer in self.room.participants
        )


def room_channel(name: str) -> str:
    return f"room:{name}:messages"
