"""The rooms domain's rows as records: a room, a membership, a message.

A room's ``id`` names its incarnation: a room deleted and created again under
the same name gets a new one, and every row keyed by the old id stays invisible
to it (``store.py`` has the room row's rules).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from gateway.db import clock
from gateway.db.clock import time_of
from gateway.db.session import Row


@dataclass(frozen=True)
class RoomRecord:
    name: str
    id: UUID
    creator_login: str
    created_at: datetime
    banner: str | None

    @classmethod
    def from_row(cls, row: Row) -> RoomRecord | None:
        """The room, or None for a "zombie" row (cells of a deleted room, no creator)."""
        if row["id"] is None or row["creator_login"] is None or row["created_at"] is None:
            return None
        return cls(
            name=row["name"],
            id=row["id"],
            creator_login=row["creator_login"],
            created_at=clock.utc(row["created_at"]),
            banner=row["banner"],
        )


@dataclass(frozen=True)
class UserRoom:
    """A row of ``user_rooms``: a room by name and the incarnation that was joined."""

    login: str
    room_name: str
    room_id: UUID


@dataclass(frozen=True)
class RoomMessageRecord:
    room_name: str
    room_id: UUID
    id: UUID
    author_login: str | None
    content: str
    system_message: bool

    @property
    def posted_at(self) -> datetime:
        return time_of(self.id)
