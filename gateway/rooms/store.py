"""Rooms and memberships in Cassandra (KillrChat's model and its LWT rules).

A room row holds the creator, creation date, banner and the participants set.
Its life cycle is guarded by lightweight transactions so that concurrent
joins, leaves and a deletion never leave a half room behind:

- create: ``INSERT ... IF NOT EXISTS`` (one of N racers for a name wins);
- join: ``UPDATE ... SET participants = participants + {login} IF EXISTS``. A
  plain update racing a deletion would write the set cell into the deleted
  partition and resurrect a "zombie" room with one participant and every other
  column null;
- leave: ``UPDATE ... SET participants = participants - {login} IF EXISTS``.
  KillrChat made this a plain write (a set-element tombstone commutes with
  additions and writes no row marker, so it cannot resurrect a room). It is a
  lightweight transaction here because every other write to ``participants``
  is one: a plain write carries the client's clock while Paxos writes carry
  the ballot's, and with clock skew between hosts a leave could shadow a later
  join (or a join a later leave). Keeping one kind of write per cell keeps the
  order of joins and leaves the order Paxos decided;
- delete: ``DELETE ... IF creator_login = ? AND participants = ?`` with the set
  the deleter just read, so a participant who joins meanwhile makes the
  condition fail and is not missed by the clean-up that follows.

Each user's rooms live in ``rooms_by_user`` (not in the ``users`` row, whose
writes are all lightweight transactions: plain set writes there would mix the
two on one row).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from uuid import UUID

from cassandra import InvalidRequest
from cassandra.protocol import ProtocolException

from gateway.db import clock
from gateway.db.lwt import retry_unknown_outcome
from gateway.db.session import Database, Row, chunked
from gateway.rooms.paging_state import InvalidPagingState
from gateway.settings import Settings

#: How far past its old offset a cursor's room is looked for when rooms were
#: created before it since the cursor was issued.
SCAN_DRIFT = 200

_ROOM_COLUMNS = "name, id, creator_login, created_at, banner, participants"


@dataclass(frozen=True)
class RoomRecord:
    name: str
    id: UUID
    creator_login: str
    created_at: datetime
    banner: str | None
    participants: frozenset[str]

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
            participants=frozenset(row["participants"] or ()),
        )


@dataclass(frozen=True)
class DeleteOutcome:
    """The answer to a conditional delete: applied, or what the row holds now
    (``current`` None: there is no room of that name any more)."""

    applied: bool
    current: RoomRecord | None = None


@dataclass(frozen=True)
class Membership:
    """A row of ``rooms_by_user``, with its write time (for repairs that must not
    delete a newer join of the same room)."""

    room_name: str
    joined_at: datetime
    written_at: int


@dataclass(frozen=True)
class ScanPosition:
    """A place in the scan of the whole rooms table: the driver's paging state, and
    for a room inside a page, its offset from that state and its name."""

    paging_state: bytes | None
    offset: int
    name: str | None


@dataclass(frozen=True)
class RoomScanPage:
    #: In scan order, each with its position; None where a row is not a whole room.
    rooms: list[tuple[ScanPosition, RoomRecord | None]]
    has_next: bool


def _named(rows: list[Row], index: int, name: str) -> bool:
    return 0 <= index < len(rows) and rows[index]["name"] == name


class RoomStore:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings

    # -- rooms ----------------------------------------------------------------

    async def create(self, room: RoomRecord) -> bool:
        """Claim the name; False when a room of that name exists (one of N racers wins).

        When an attempt's answer is lost (CAS timeout) it is sent again: finding
        our own room id in the row then means the first attempt had won.
        """

        async def attempt() -> bool:
            result = await self.db.execute(
                f"INSERT INTO rooms ({_ROOM_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) IF NOT EXISTS",
                (room.name, room.id, room.creator_login, room.created_at, room.banner,
                 set(room.participants)),
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

    async def scan(self, count: int, after: ScanPosition | None) -> RoomScanPage:
        """``count`` rooms of the whole table in token order, continuing after ``after``.

        The scan is the driver's own paging: each round trip asks for exactly the
        rooms still wanted, so the paging state returned with the last one points
        just past the page's last room and becomes the cursor of that room. A room
        inside a page has no paging state of its own; its cursor is the page's
        starting state, its offset from there and its name. Resuming from it
        re-reads that stretch and looks for the name, so rooms created or
        deleted meanwhile before it shift nothing; only when the room itself is
        gone does the offset decide.
        """
        start = after or ScanPosition(None, 0, None)
        rows, state = await self._read(start.paging_state, start.offset + count)
        base = start.offset
        if start.name is not None and not _named(rows, base - 1, start.name):
            found, state = await self._find(rows, state, start, count)
            if found is not None:
                base = found
        exact_end = base + count >= len(rows)
        taken = rows[base : base + count]
        rooms = [
            (
                ScanPosition(state, 0, None)
                if exact_end and i == len(taken) - 1 and state is not None
                else ScanPosition(start.paging_state, base + i + 1, row["name"]),
                RoomRecord.from_row(row),
            )
            for i, row in enumerate(taken)
        ]
        if not exact_end:
            has_next = True
        elif state is None:
            has_next = False
        else:
            has_next = await self._any_after(state)
        return RoomScanPage(rooms=rooms, has_next=has_next)

    async def _find(
        self, rows: list[Row], state: bytes | None, start: ScanPosition, count: int
    ) -> tuple[int | None, bytes | None]:
        """Where the named room of ``start`` now is in ``rows`` (the index just after
        it; None when it is gone), reading up to ``SCAN_DRIFT`` more rooms into
        ``rows`` to find it and ``count`` more after it. Returns the paging state
        after the last row read."""
        searched = 0
        while True:
            for index in range(searched, len(rows)):
                if rows[index]["name"] == start.name:
                    missing = index + 1 + count - len(rows)
                    if missing > 0 and state is not None:
                        more, state = await self._read(state, missing)
                        rows.extend(more)
                    return index + 1, state
            searched = len(rows)
            if state is None or len(rows) >= start.offset + count + SCAN_DRIFT:
                return None, state
            more, state = await self._read(state, count)
            rows.extend(more)

    async def _read(self, paging_state: bytes | None, wanted: int) -> tuple[list[Row], bytes | None]:
        rows: list[Row] = []
        state = paging_state
        while len(rows) < wanted:
            try:
                result = await self.db.execute(
                    f"SELECT {_ROOM_COLUMNS} FROM rooms", fetch_size=wanted - len(rows), paging_state=state
                )
            except (InvalidRequest, ProtocolException) as exc:
                raise InvalidPagingState(str(exc)) from exc
            rows.extend(result.rows)
            state = result.paging_state
            if state is None:
                break
        return rows, state

    async def _any_after(self, paging_state: bytes) -> bool:
        """Whether the scan has a room left past ``paging_state`` (a page that ends
        exactly where the table ends still gets a paging state from Cassandra)."""
        rows, _ = await self._read(paging_state, 1)
        return bool(rows)

    async def add_participant(self, name: str, login: str) -> bool:
        """``participants + {login} IF EXISTS``; False when the room does not exist.

        ``IF EXISTS`` is what keeps a join racing a deletion from resurrecting
        the room as a zombie row. The write is idempotent, so an unknown outcome
        (CAS timeout under contention) is retried.
        """

        async def attempt() -> bool:
            result = await self.db.execute(
                "UPDATE rooms SET participants = participants + ? WHERE name = ? IF EXISTS",
                ({login}, name),
            )
            return result.applied

        return await retry_unknown_outcome(attempt)

    async def delete_if_unchanged(self, room: RoomRecord, creator_login: str) -> DeleteOutcome:
        """``DELETE ... IF id = ? AND creator_login = ? AND participants = ?``.

        KillrChat's condition: applies only while ``creator_login`` (the viewer) is
        the creator and nobody joined or left since ``room.participants`` was
        read, so a participant who joins meanwhile is not missed by the clean-up.
        ``id`` pins the incarnation that was read, whose history is then erased.
        When it does not apply, Cassandra returns the row's current values, which
        the caller retries with. An empty set is stored as null, so it is
        compared as null.
        """
        result = await self.db.execute(
            "DELETE FROM rooms WHERE name = ? IF id = ? AND creator_login = ? AND participants = ?",
            (room.name, room.id, creator_login, set(room.participants) or None),
        )
        row = result.one() or {}
        if row.get("[applied]"):
            return DeleteOutcome(applied=True)
        current = None
        if row.get("id") is not None and row.get("creator_login") is not None:
            current = replace(
                room,
                id=row["id"],
                creator_login=row["creator_login"],
                participants=frozenset(row.get("participants") or ()),
            )
        return DeleteOutcome(applied=False, current=current)

    # -- memberships ------------------------------------------------------------

    async def record_membership(self, login: str, name: str, joined_at: datetime) -> None:
        await self.db.execute(
            "INSERT INTO rooms_by_user (login, room_name, joined_at) VALUES (?, ?, ?)",
            (login, name, joined_at),
        )

    async def forget_membership(self, login: str, name: str) -> None:
        await self.db.execute(
            "DELETE FROM rooms_by_user WHERE login = ? AND room_name = ?", (login, name)
        )

    async def leave(self, name: str, login: str) -> None:
        """Remove ``login`` from the room, then the room from the user's rooms.

        The participant removal comes first: if the second write is lost, the
        user's rooms still name a room they are not in, which ``User.rooms``
        skips and repairs on its next read. Both steps are idempotent, so a
        client retries a failed leave safely.
        """
        await self.db.execute(
            "UPDATE rooms SET participants = participants - ? WHERE name = ? IF EXISTS", ({login}, name)
        )
        await self.forget_membership(login, name)

    async def forget_memberships(self, name: str, logins: Iterable[str]) -> None:
        """Remove a deleted room from its participants' rooms.

        Unlogged batches of up to 100 partitions, sent concurrently: if the
        process dies halfway, a stale row is left; readers of ``User.rooms``
        skip and delete such rows, so no batch log is needed.
        """
        statements = [
            ("DELETE FROM rooms_by_user WHERE login = ? AND room_name = ?", (login, name))
            for login in sorted(set(logins))
        ]
        await asyncio.gather(*(self.db.batch(chunk, logged=False) for chunk in chunked(statements)))

    async def memberships(self, login: str) -> list[Membership]:
        rows = await self.db.execute_all(
            "SELECT room_name, joined_at, writetime(joined_at) AS written_at FROM rooms_by_user"
            " WHERE login = ?",
            (login,),
        )
        return [
            Membership(row["room_name"], clock.utc(row["joined_at"]), row["written_at"]) for row in rows
        ]

    async def forget_stale_membership(self, login: str, membership: Membership) -> None:
        """Delete a stale membership row as it was read: ``USING TIMESTAMP`` of its own
        write, so a newer join of a room by that name (written later) survives."""
        await self.db.execute(
            "DELETE FROM rooms_by_user USING TIMESTAMP ? WHERE login = ? AND room_name = ?",
            (membership.written_at, login, membership.room_name),
        )
