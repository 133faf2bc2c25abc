"""Who is in which room: ``room_participants``, their counts and ``user_rooms``.

Membership is rows, not a set in the ``rooms`` row, so a room's delete condition
no longer carries its participants (busy rooms no longer make deletes lose) and
every partition is bounded: a room holds at most ``GATEWAY_ROOM_MAX_PARTICIPANTS``
participant rows, a user at most ``GATEWAY_ROOMS_PER_USER_MAX`` live ``user_rooms`` rows.

Rows are keyed by the room's incarnation id (``rooms.id``), so rows of a
deleted room are invisible to a room created again under the same name.

**Join racing delete.** A join writes its participant row and its ``user_rooms``
row, *then* reads the ``rooms`` row and undoes both unless the same incarnation
is still there. A delete removes the ``rooms`` row (a lightweight transaction),
*then* reads the incarnation's participant rows and deletes each one's
``user_rooms`` row. Each write is acknowledged at LOCAL_QUORUM before its read
at LOCAL_QUORUM starts, so whichever read comes second sees the other's write:
either the join sees the room gone and undoes itself, or the clean-up sees the
joiner and removes their row. No member is left listing a dead room. The join
never writes the ``rooms`` row, so it cannot resurrect it as a "zombie" either.

**Order of writes.** A ``user_rooms`` row for a live incarnation implies a
participant row: joins write the participant row first, leaves and undos
delete the ``user_rooms`` row first. An interruption can leave a participant
whose own list misses the room (joining again repairs it), never a list that
names a room its user is not in, so ``User.rooms`` checks only that the room
still exists with that id.

**Bounds, exactly.** Both caps are checked *after* the write, each by a read
that sees every write acknowledged before it: the participant count (a
counter, incremented only by the join whose ``IF NOT EXISTS`` applied) and the
count of the user's ``user_rooms`` rows. Of joins racing for the last place,
the one whose check reads last sees all of them, so the bound is never
exceeded. At the edge, racers may all see too many and all undo; each tries
again after a jittered delay (bounded, ``gateway.rooms.service``), so some get
the places, and the rest get CONFLICT. A counter update whose answer is lost is not
retried (it is not idempotent), so a count can end one off after a join or leave
that answered ``UNAVAILABLE``; ``gateway rooms-recount`` sets it to the rows again
(``gateway.rooms.recount``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from gateway.db import clock
from gateway.db.lwt import retry_unknown_outcome
from gateway.db.session import Database, chunked
from gateway.rooms.records import UserRoom
from gateway.settings import Settings

log = logging.getLogger(__name__)

#: Participant rows read per round trip by a deletion's clean-up.
CLEANUP_PAGE = 100
#: Most (room, login) pairs one read of room mates asks Cassandra about.
ROOM_MATE_PAIRS = 1000
#: Logins a recheck of a room's subscribers asks about in one read (as a DataLoader batches).
PARTICIPANTS_PER_READ = 100
#: Stale ``user_rooms`` rows a process deletes in the background at once; more
#: found meanwhile are left for a later read to find again.
MAX_PENDING_REPAIRS = 1000


@dataclass(frozen=True)
class Slice:
    """Up to ``first`` items of a clustered partition in key order, and whether more follow."""

    items: list[str]
    has_next: bool


@dataclass(frozen=True)
class UserRoomSlice:
    rows: list[UserRoom]
    has_next: bool


class MemberStore:
    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self._repairs: set[asyncio.Task[None]] = set()
        self._pending = 0

    # -- joining and leaving ------------------------------------------------------

    async def add(self, room_id: UUID, login: str, joined_at: datetime) -> bool:
        """``INSERT ... IF NOT EXISTS``: True when this call made ``login`` a participant.

        An attempt whose answer is lost is sent again; finding our own
        ``joined_at`` in the row then means the lost attempt had applied.
        """
        attempts = 0

        async def attempt() -> bool:
            nonlocal attempts
            attempts += 1
            result = await self.db.execute(
                "INSERT INTO room_participants (room_id, login, joined_at) VALUES (?, ?, ?) IF NOT EXISTS",
                (room_id, login, joined_at),
            )
            if result.applied:
                return True
            found = (result.one() or {}).get("joined_at")
            return attempts > 1 and found is not None and clock.utc(found) == joined_at

        return await retry_unknown_outcome(attempt)

    async def remove(self, room_id: UUID, login: str) -> bool:
        """True when this call ended ``login``'s membership (False: not a participant).

        The row is read, then deleted on the condition that it is still the membership read
        (``IF joined_at = ?``), so that an attempt whose answer is lost can be sent again:
        a retry that finds the row gone means the lost attempt applied (only the member's own
        leaves delete it), and the caller moves the count once.
        """
        row = (
            await self.db.execute(
                "SELECT joined_at FROM room_participants WHERE room_id = ? AND login = ?", (room_id, login)
            )
        ).one()
        if row is None:
            return False
        joined_at = row["joined_at"]
        attempts = 0

        async def attempt() -> bool:
            nonlocal attempts
            attempts += 1
            result = await self.db.execute(
                "DELETE FROM room_participants WHERE room_id = ? AND login = ? IF joined_at = ?",
                (room_id, login, joined_at),
            )
            if result.applied:
                return True
            return attempts > 1 and (result.one() or {}).get("joined_at") is None

        return await retry_unknown_outcome(attempt)

    async def is_participant(self, room_id: UUID, login: str) -> bool:
        row = (
            await self.db.execute(
                "SELECT login FROM room_participants WHERE room_id = ? AND login = ?", (room_id, login)
            )
        ).one()
        return row is not None

    async def participants_among(self, room_id: UUID, logins: Iterable[str]) -> set[str]:
        """Of ``logins``, those in the room: one read per :data:`PARTICIPANTS_PER_READ` logins,
        run concurrently."""
        wanted = sorted(set(logins))

        async def among(chunk: list[str]) -> set[str]:
            found = await self.db.execute(
                "SELECT login FROM room_participants WHERE room_id = ? AND login IN ?",
                (room_id, chunk),
                fetch_size=len(chunk) + 1,
            )
            return {row["login"] for row in found.rows}

        step = PARTICIPANTS_PER_READ
        found = await asyncio.gather(*(among(wanted[at : at + step]) for at in range(0, len(wanted), step)))
        return set().union(*found)

    async def count_by(self, room_id: UUID, delta: int) -> None:
        await self.db.execute(
            "UPDATE room_participant_counts SET participants = participants + ? WHERE room_id = ?",
            (delta, room_id),
        )

    async def count(self, room_id: UUID) -> int:
        return (await self.counts([room_id])).get(room_id, 0)

    async def recount(self, room_id: UUID) -> tuple[int, int]:
        """Set the count to the participant rows (read ``CLEANUP_PAGE`` at a time) by moving
        it by the difference; (count before, rows)."""
        rows = 0
        after: str | None = None
        while True:
            page = await self.participants(room_id, CLEANUP_PAGE, after)
            rows += len(page.items)
            if not page.has_next:
                break
            after = page.items[-1]
        before = await self.count(room_id)
        if before != rows:
            await self.count_by(room_id, rows - before)
        return before, rows

    async def counts(self, room_ids: Iterable[UUID]) -> dict[UUID, int]:
        """Participant counts by incarnation: one ``IN`` read per 100 ids."""
        rows = await self.db.select_in(
            "SELECT room_id, participants FROM room_participant_counts WHERE room_id IN ?", room_ids
        )
        return {row["room_id"]: row["participants"] or 0 for row in rows}

    async def participants(self, room_id: UUID, first: int, after: str | None) -> Slice:
        """Logins in order, after ``after``: one slice of ``first + 1`` rows."""
        if after is None:
            result = await self.db.execute(
                "SELECT login FROM room_participants WHERE room_id = ? LIMIT ?", (room_id, first + 1)
            )
        else:
            result = await self.db.execute(
                "SELECT login FROM room_participants WHERE room_id = ? AND login > ? LIMIT ?",
                (room_id, after, first + 1),
            )
        logins = [row["login"] for row in result.rows]
        return Slice(logins[:first], len(logins) > first)

    # -- a user's rooms -------------------------------------------------------------

    async def record(self, membership: UserRoom, joined_at: datetime) -> None:
        await self.db.execute(
            "INSERT INTO user_rooms (login, room_name, room_id, joined_at) VALUES (?, ?, ?, ?)",
            (membership.login, membership.room_name, membership.room_id, joined_at),
        )

    async def forget(self, membership: UserRoom) -> None:
        await self.db.execute(
            "DELETE FROM user_rooms WHERE login = ? AND room_name = ? AND room_id = ?",
            (membership.login, membership.room_name, membership.room_id),
        )

    async def rooms_of_count(self, login: str, at_most: int) -> int:
        """The user's ``user_rooms`` rows, counted up to ``at_most`` (the cap's check needs
        no more; stale rows not yet repaired count too)."""
        result = await self.db.execute(
            "SELECT room_name FROM user_rooms WHERE login = ? LIMIT ?", (login, at_most), fetch_size=at_most
        )
        return len(result.rows)

    async def rooms_of(self, login: str, first: int, after: tuple[str, UUID] | None) -> UserRoomSlice:
        """The user's rows by room name, after ``after``: one slice of ``first + 1`` rows."""
        if after is None:
            result = await self.db.execute(
                "SELECT room_name, room_id FROM user_rooms WHERE login = ? LIMIT ?", (login, first + 1)
            )
        else:
            result = await self.db.execute(
                "SELECT room_name, room_id FROM user_rooms WHERE login = ?"
                " AND (room_name, room_id) > (?, ?) LIMIT ?",
                (login, after[0], after[1], first + 1),
            )
        rows = [UserRoom(login, row["room_name"], row["room_id"]) for row in result.rows]
        return UserRoomSlice(rows[:first], len(rows) > first)

    async def room_mates(self, login: str, others: Iterable[str]) -> set[str]:
        """Of ``others``, those in a room ``login`` is in: one read of ``login``'s rooms (at
        most ``ROOMS_PER_USER_MAX`` rows), then reads of those rooms' rows of ``others``,
        each asking for at most :data:`ROOM_MATE_PAIRS` (room, login) pairs (one read for
        a user in 10 rooms asking of 100 users), run concurrently."""
        wanted = sorted(set(others) - {login})
        if not wanted:
            return set()
        limit = self.settings.rooms_per_user_max
        mine = await self.db.execute(
            "SELECT room_id FROM user_rooms WHERE login = ? LIMIT ?", (login, limit), fetch_size=limit
        )
        rooms = sorted({row["room_id"] for row in mine.rows})
        step = max(1, ROOM_MATE_PAIRS // len(wanted))

        async def among(chunk: list[UUID]) -> set[str]:
            pairs = len(chunk) * len(wanted)
            found = await self.db.execute(
                "SELECT login FROM room_participants WHERE room_id IN ? AND login IN ? LIMIT ?",
                (chunk, wanted, pairs),
                fetch_size=pairs + 1,
            )
            return {row["login"] for row in found.rows}

        found = await asyncio.gather(*(among(rooms[at : at + step]) for at in range(0, len(rooms), step)))
        return set().union(*found)

    # -- a deleted room ------------------------------------------------------------

    async def forget_room(self, room_id: UUID, name: str) -> int:
        """Remove a deleted incarnation from every participant's rooms, then drop its
        participant rows and count (whole partitions of the dead incarnation); returns how
        many participants were found.

        The participant rows are read a page at a time (``CLEANUP_PAGE``), each
        page's ``user_rooms`` rows deleted in one unlogged batch (no batch log:
        a row left by an interruption is skipped by readers and repaired by the
        next read that meets it). Dropping the partition is a plain delete on rows written
        by lightweight transactions; it is safe because the incarnation is dead:
        a join that lands afterwards sees the room gone and undoes itself.
        """
        found = 0
        after: str | None = None
        while True:
            page = await self.participants(room_id, CLEANUP_PAGE, after)
            if page.items:
                await self.db.batch(
                    [
                        (
                            "DELETE FROM user_rooms WHERE login = ? AND room_name = ? AND room_id = ?",
                            (login, name, room_id),
                        )
                        for login in page.items
                    ],
                    logged=False,
                )
            found += len(page.items)
            if not page.has_next:
                break
            after = page.items[-1]
        await self.db.execute("DELETE FROM room_participants WHERE room_id = ?", (room_id,))
        await self.db.execute("DELETE FROM room_participant_counts WHERE room_id = ?", (room_id,))
        return found

    # -- repairs off the read path -----------------------------------------------

    def repair_later(self, stale: Sequence[UserRoom]) -> None:
        """Delete ``user_rooms`` rows of dead incarnations in the background.

        Readers skip such rows whatever happens here; deleting them only keeps
        partitions small. At most ``MAX_PENDING_REPAIRS`` rows are pending per
        process, in unlogged batches of one user's partition each.
        """
        if not stale or self._pending + len(stale) > MAX_PENDING_REPAIRS:
            return
        self._pending += len(stale)
        task = asyncio.get_running_loop().create_task(self._repair(list(stale)))
        self._repairs.add(task)
        task.add_done_callback(self._repairs.discard)

    async def _repair(self, stale: list[UserRoom]) -> None:
        by_login: dict[str, list[UserRoom]] = {}
        for membership in stale:
            by_login.setdefault(membership.login, []).append(membership)
        try:
            await asyncio.gather(
                *(
                    self.db.batch(
                        [
                            (
                                "DELETE FROM user_rooms WHERE login = ? AND room_name = ? AND room_id = ?",
                                (m.login, m.room_name, m.room_id),
                            )
                            for m in chunk
                        ],
                        logged=False,
                    )
                    for rows in by_login.values()
                    for chunk in chunked(rows)
                )
            )
        except Exception:
            log.warning("stale room memberships were not repaired; a later read retries", exc_info=True)
        finally:
            self._pending -= len(stale)

    async def repairs_settled(self) -> None:
        """Wait for the background repairs started so far (tests, shutdown)."""
        while self._repairs:
            await asyncio.gather(*list(self._repairs), return_exceptions=True)
