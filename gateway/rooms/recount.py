"""``gateway rooms-recount [room ...]``: repair participant counts after lost counter updates.

A join or a leave moves its room's count (a counter) once its lightweight transaction applied.
A counter update whose answer is lost (the node it went to died, or it timed out) may or may
not have applied, and is not sent again: the count can end one off. This counts each room's
participant rows and moves its counter by the difference. A join or leave landing while it
runs can leave that room one off again; running it again settles it.
"""

from __future__ import annotations

from gateway.db.session import Database
from gateway.rooms.member_store import MemberStore
from gateway.rooms.records import RoomRecord
from gateway.rooms.store import RoomStore
from gateway.settings import Settings

#: Rooms read per page of the scan when no room is named.
PAGE = 100


async def recount(db: Database, settings: Settings, names: list[str]) -> int:
    """Recount the named rooms (every room when none is named); exit status 2 for an unknown one."""
    rooms = RoomStore(db, settings)
    members = MemberStore(db, settings)
    targets: list[RoomRecord] = []
    if names:
        found = await rooms.get_many(names)
        missing = sorted(set(names) - set(found))
        if missing:
            print(f"no room named: {', '.join(missing)}")
            return 2
        targets = [found[name] for name in sorted(set(names))]
    else:
        after: str | None = None
        while True:
            page = await rooms.scan(PAGE, after)
            targets += [room for _, room in page.rooms if room is not None]
            if not page.has_next:
                break
            after = page.rooms[-1][0]
    for room in targets:
        before, now = await members.recount(room.id)
        change = "" if before == now else f"  (was {before})"
        print(f"room {room.name}: {now} participants{change}")
    return 0
