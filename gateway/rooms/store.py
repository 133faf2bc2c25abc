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
read it; see ``docs/data-model/rooms.md``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from gateway.db.lwt import retry_unknown_outcome
from gateway.db.session import Database
from gateway.rooms.records import RoomRecord
from gateway.settings import Settings

_ROOM_COLUMNS = "name, id, creator_login, created_at, banner"


@dataclass(frozen=True)
class DeleteOutcome:
    """The answer to a conditional delete: applied, or what the row holds now
    (``current`` None: there is no room of that name any more)."""

    applied: bool
    current: RoomRecord | None = None


@dataclass(frozen=True)
class RoomScanPage:
    #: In token order, each with its name (the cursor); None where a row is not a whole room.
    rooms: list[tuple[str, RoomRecord | None]]
    has_next: bool


class RoomStore:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings

    async def create(self, room: RoomRecord) -> bool:
        """Claim the name; False when a room of that name exists (one of N racers wins).

        When an attempt's answer is lost (CAS timeout) it is sent again: finding
        our own room id in the row then means the first attempt had won.
        """

        async def attempt() -> bool:
            result = await self.db.execute(
                f"INSERT INTO rooms ({_ROOM_COLUMNS}) VALUES (?, ?, ?, ?, ?) IF NOT EXISTS",
                (room.name, room.id, room.creator_login, room.created_at, room.banner),
            )
            return result.applied or (result.one() or {}).get("id") == room.id

        return await retry_unknown_outcome(attempt)

    async def get(self, name: str) -> RoomRecord | None:
        row = (await self.db.execute(f"SELECT {_ROOM_COLUMNS} FROM rooms WHERE name = ?", (name,))).one()
        return RoomRecord.from_row(row) if row else None

    async def get_many(self, names: Iterable[str]) -> dict[str, RoomRecord]:
        """Rooms by name: one ``IN`` read per 100 distinct names."""
        rows = await self.db.select_in(f"SELECT {_ROOM_COLUMNS} FROM rooms WHERE name IN ?", names)
        rooms = (RoomRecord.from_row(row) for row in rows)
        return {room.name: room for room in rooms if room is not None}

    async def scan(self, count: int, after: str | None) -> RoomScanPage:
        """``count`` rooms of the whole table in token order, after the room named ``after``.

        The one range read of the gateway: ``token(name) > token(?)`` with a
        ``LIMIT`` of ``count + 1`` (the extra row answers ``has_next``), so a page
        costs one statement and ``count + 1`` rows wherever it starts. The
        position is a room name, which need not exist any more: rooms created or
        deleted elsewhere in the table shift nothing. (Two names whose 64-bit
        Murmur3 tokens collide would let a page skip one of them.)
        """
        if after is None:
            result = await self.db.execute(f"SELECT {_ROOM_COLUMNS} FROM rooms LIMIT ?", (count + 1,))
        else:
            result = await self.db.execute(
                f"SELECT {_ROOM_COLUMNS} FROM rooms WHERE token(name) > token(?) LIMIT ?",
                (after, count + 1),
            )
        rows = result.rows
        return RoomScanPage(
            rooms=[(row["name"], RoomRecord.from_row(row)) for row in rows[:count]],
            has_next=len(rows) > count,
        )

    async def delete(self, room: RoomRecord, creator_login: str) -> DeleteOutcome:
        """``DELETE ... IF creator_login = ? AND id = ?``.

        Applies only while ``creator_login`` (the viewer) is the creator of the
        incarnation that was read. When it does not apply, Cassandra returns
        the row's current values.
        """
        result = await self.db.execute(
            "DELETE FROM rooms WHERE name = ? IF creator_login = ? AND id = ?",
            (room.name, creator_login, room.id),
        )
        row = result.one() or {}
        if row.get("[applied]"):
            return DeleteOutcome(applied=True)
        current = None
        if row.get("id") is not None and row.get("creator_login") is not None:
            current = RoomRecord(
                name=room.name,
                id=row["id"],
                creator_login=row["creator_login"],
                created_at=room.created_at,
                banner=room.banner,
            )
        return DeleteOutcome(applied=False, current=current)

    async def legacy_participants(
        self, count: int, after: str | None
    ) -> tuple[list[tuple[RoomRecord, frozenset[str]]], str | None]:
        """``count`` rooms in token order after ``after``, each with the participants set
        that earlier gateways kept in the row (read by ``gateway backfill rooms`` only),
        and the name to continue after (None at the end of the table)."""
        columns = f"{_ROOM_COLUMNS}, participants"
        if after is None:
            result = await self.db.execute(f"SELECT {columns} FROM rooms LIMIT ?", (count + 1,))
        else:
            result = await self.db.execute(
                f"SELECT {columns} FROM rooms WHERE token(name) > token(?) LIMIT ?", (after, count + 1)
            )
        rooms = []
        for row in result.rows[:count]:
            record = RoomRecord.from_row(row)
            if record is not None:
                rooms.append((record, frozenset(row["participants"] or ())))
        more = len(result.rows) > count
        return rooms, result.rows[count - 1]["name"] if more else None
