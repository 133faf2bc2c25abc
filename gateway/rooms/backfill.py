"""``gateway backfill rooms``: copy memberships kept by earlier gateways into today's tables.

Earlier gateways kept a room's participants in the ``participants`` set of its
``rooms`` row. For every room, page by page in token order, each login of that
set gets its ``room_participants`` row (``INSERT ... IF NOT EXISTS``, the only
kind of write that row sees), its ``user_rooms`` row, and the room's counter
moves by the rows this run inserted. Safe to run again, and while the gateway
serves: a row that exists already (from a join, or an earlier run) is neither
rewritten nor counted twice. Neither bound applies here: a room or a user over
its bound keeps what it had, and new joins are refused until it is under.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial

from gateway.db import clock
from gateway.db.concurrency import InFlightLimit
from gateway.db.session import Database
from gateway.rooms.member_store import MemberStore
from gateway.rooms.records import RoomRecord, UserRoom
from gateway.rooms.store import RoomStore
from gateway.settings import Settings

log = logging.getLogger(__name__)

#: Rooms read per page of the scan.
PAGE = 100
#: Memberships copied at once.
IN_FLIGHT = 32


@dataclass
class BackfillReport:
    rooms: int = 0
    memberships: int = 0
    #: Participant rows this run inserted (the others existed already).
    inserted: int = 0


async def backfill_rooms(
    db: Database, settings: Settings, *, page: int = PAGE, in_flight: int = IN_FLIGHT
) -> BackfillReport:
    rooms = RoomStore(db, settings)
    members = MemberStore(db, settings)
    limit = InFlightLimit(in_flight)
    report = BackfillReport()
    after: str | None = None
    while True:
        found, after = await rooms.legacy_participants(page, after)
        for room, logins in found:
            report.rooms += 1
            report.memberships += len(logins)
            report.inserted += await _copy_room(members, limit, room, sorted(logins))
        if after is None:
            return report


async def _copy_room(members: MemberStore, limit: InFlightLimit, room: RoomRecord, logins: list[str]) -> int:
    async def copy(login: str) -> bool:
        joined_at = clock.now()
        inserted = await members.add(room.id, login, joined_at)
        await members.record(UserRoom(login, room.name, room.id), joined_at)
        return inserted

    results = await limit.run_all([partial(copy, login) for login in logins])
    inserted = sum(results)
    if inserted:
        await members.count_by(room.id, inserted)
    return inserted


async def backfill(db: Database, settings: Settings) -> str:
    """The ``gateway backfill rooms`` command: the copy and its one-line summary."""
    report = await backfill_rooms(db, settings)
    return f"{report.rooms} rooms, {report.memberships} memberships, {report.inserted} participant rows added"
