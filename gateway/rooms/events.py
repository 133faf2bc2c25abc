"""What a room's subscribers receive, on one publish/subscribe channel per room."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any
from uuid import UUID

from gateway.broker.codec import EventType
from gateway.rooms.records import RoomMessageRecord, RoomRecord
from gateway.users.records import UserProfile


class RoomEventKind(Enum):
    MESSAGE = "message"
    CREATED = "created"
    JOINED = "joined"
    LEFT = "left"
    DELETED = "deleted"


@dataclass(frozen=True)
class RoomEvent:
    """A message of the room (a system message for everything but ``MESSAGE``),
    with the room as it stands right after the event and who caused it; a posted
    message carries its author's public profile, so that no subscriber reads it."""

    kind: RoomEventKind
    message: RoomMessageRecord
    room: RoomRecord
    login: str
    author: UserProfile | None = None

    def ends_subscription_of(self, viewer: str) -> bool:
        """Whether ``viewer``'s subscription ends after this event: when the room is
        deleted, and when the viewer leaves (subscriptions are for participants)."""
        return self.kind is RoomEventKind.DELETED or (
            self.kind is RoomEventKind.LEFT and self.login == viewer
        )


def room_channel(name: str) -> str:
    return f"room:{name}:messages"


def _room_to_json(room: RoomRecord) -> dict[str, Any]:
    return {
        "name": room.name,
        "id": str(room.id),
        "creator": room.creator_login,
        "createdAt": room.created_at.isoformat(),
        "banner": room.banner,
    }


def _room_from_json(data: dict[str, Any]) -> RoomRecord:
    return RoomRecord(
        name=data["name"],
        id=UUID(data["id"]),
        creator_login=data["creator"],
        created_at=datetime.fromisoformat(data["createdAt"]),
        banner=data["banner"],
    )


def _event_to_json(event: RoomEvent) -> dict[str, Any]:
    message = event.message
    return {
        "kind": event.kind.value,
        "login": event.login,
        "room": _room_to_json(event.room),
        "message": {
            "id": str(message.id),
            "author": message.author_login,
            "content": message.content,
            "system": message.system_message,
        },
        "author": None if event.author is None else event.author.to_json(),
    }


def _event_from_json(data: dict[str, Any]) -> RoomEvent:
    room = _room_from_json(data["room"])
    message = data["message"]
    return RoomEvent(
        kind=RoomEventKind(data["kind"]),
        message=RoomMessageRecord(
            room_name=room.name,
            room_id=room.id,
            id=UUID(message["id"]),
            author_login=message["author"],
            content=message["content"],
            system_message=bool(message["system"]),
        ),
        room=room,
        login=data["login"],
        author=None if data.get("author") is None else UserProfile.from_json(data["author"]),
    )


#: How a :class:`RoomEvent` crosses a broker.
ROOM_EVENT = EventType("room", RoomEvent, _event_to_json, _event_from_json)
