"""The ``rooms`` rows (KillrChat's model and its LWT rules).

A room row holds the creator, creation date, banner and ``id``, the room's
incarnation: a room deleted and created again under the same name gets a new
id, and every row keyed by the old one (history, participants, memberships)
stays invisible to it. Who is in a room lives in ``gateway.rooms.member_store``.

- create: ``INSERT ... IF NOT EXISTS`` (one of N racers for a name wins);
- delete: ``DELETE ... IF creator_login = ? AND id = ?``: only the creator
  deletes, and only the incarnation that was read. The condition carries no
  participants, so joins and leaves never make a delete lose;
- nothing else writes the row: a join never does, so a join racing a deletion
  cannot resurrect the room as a "zombie" row.

The ``participants`` column is no longer read or written (older gateways still
read it; see the README).
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
