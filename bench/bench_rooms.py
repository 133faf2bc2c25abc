"""Rooms: history reads, posting, joining a busy room, a page of a room's participants,
a page of a user's rooms and listing rooms through the gateway, beside the same
Cassandra work done on the driver.

Run: ``.venv/bin/python -m bench.bench_rooms``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bench.harness import Target, counted, gateway_under_test, report, side_by_side
from gateway.broker.memory import InProcessPubSub
from gateway.db import clock
from gateway.rooms.history_store import RoomHistory
from gateway.rooms.member_store import MemberStore
from gateway.rooms.records import UserRoom
from gateway.rooms.service import RoomService
from gateway.rooms.store import RoomStore
from gateway.users.records import UserRecord
from gateway.users.store import SessionStore, UserStore

REQUESTS = 2000
#: Each join is a new user joining the same room: an uncontended-by-design LWT per
#: request on one hot partition, the worst case for Paxos.
JOIN_REQUESTS = 400
JOIN_WARMUP = 10
CONCURRENCY = 32
AUTHORS = 50
MESSAGES_PER_AUTHOR = 10
PAGE = 50

HISTORY = """query($n: String!, $first: Int) {
  room(name: $n) {
    messages(first: $first) { edges { cursor node { id content postedAt author { login firstname } } } }
  }
}"""
POST = "mutation($r: String!, $c: String!) { postRoomMessage(room: $r, content: $c) { id postedAt } }"
JOIN = "mutation($n: String!) { joinRoom(name: $n) { name participantCount } }"
ROOMS = "{ rooms(first: 20) { edges { cursor node { name participantCount creator { login } } } } }"
PARTICIPANTS = """query($n: String!, $first: Int) {
  room(name: $n) {
    participantCount participants(first: $first) { edges { cursor node { login firstname } } }
  }
}"""
USER_ROOMS = """query($l: String!, $first: Int) {
  user(login: $l) {
    rooms(first: $first) { edges { cursor node { name participantCount creator { login } } } }
  }
}"""


@dataclass
class Member:
    login: str
    token: str


async def _members(target: Target, prefix: str, count: int) -> list[Member]:
    """Users with a session each, written on the driver (signing up 2000 users through
    argon2 would measure argon2)."""
    users = UserStore(target.db, target.settings)
    sessions = SessionStore(target.db, target.settings)

    async def one(i: int) -> Member:
        login = f"{prefix}{i}"
        record = UserRecord(login, "Bench", f"User {i}", f"{login}@example.com", "", clock.now(), "")
        await users.create(record)
        return Member(login, (await sessions.create(login)).token)

    out: list[Member] = []
    for start in range(0, count, 100):
        out.extend(await asyncio.gather(*(one(i) for i in range(start, min(count, start + 100)))))
    return out


async def main() -> None:
    async with gateway_under_test() as target:
        db, settings = target.db, target.settings
        rooms = RoomStore(db, settings)
        history = RoomHistory(db, settings)
        members = MemberStore(db, settings)
        users = UserStore(db, settings)
        service = RoomService(db, rooms, members, history, InProcessPubSub(), users)
        sessions = SessionStore(db, settings)

        authors = await _members(target, "author", AUTHORS)
        await service.create(authors[0].login, "bench-history", "History under load")
        for author in authors[1:]:
            await service.join(author.login, "bench-history")
        for n in range(MESSAGES_PER_AUTHOR):
            await asyncio.gather(
                *(service.post(a.login, "bench-history", f"message {n} from {a.login}") for a in authors)
            )
        await service.create(authors[0].login, "bench-busy", "Everyone joins")
        joiners = iter(await _members(target, "joiner", 2 * (JOIN_REQUESTS + JOIN_WARMUP)))
        for i in range(200):
            await service.create(authors[i % AUTHORS].login, f"bench-room-{i}", None)
        reader = authors[0]
        for i in range(AUTHORS, 2 * AUTHORS):
            await service.join(reader.login, f"bench-room-{i}")

        async def raw_history() -> None:
            login = await sessions.login_of(reader.token)
            room = await rooms.get("bench-history")
            assert login is not None and room is not None
            assert await members.is_participant(room.id, login)
            page = await history.page(room.name, room.id, size=PAGE, cursor=None)
            await users.get_many({m.author_login for _, m in page.items if m.author_login})

        async def raw_post(i: int) -> None:
            author = authors[i % AUTHORS]
            assert await sessions.login_of(author.token) == author.login
            room = await rooms.get("bench-history")
            assert room is not None and await members.is_participant(room.id, author.login)
            await history.append(room.name, room.id, author.login, f"raw {i}")

        async def raw_join() -> None:
            joiner = next(joiners)
            assert await sessions.login_of(joiner.token) == joiner.login
            room = await rooms.get("bench-busy")
            assert room is not None
            assert await members.count(room.id) < settings.room_max_participants
            joined_at = clock.now()
            assert await members.add(room.id, joiner.login, joined_at)
            await asyncio.gather(
                members.record(UserRoom(joiner.login, room.name, room.id), joined_at),
                members.count_by(room.id, 1),
            )
            await asyncio.gather(
                members.count(room.id),
                members.rooms_of_count(joiner.login, settings.rooms_per_user_max + 1),
                rooms.get(room.name),
            )
            await history.append(room.name, room.id, None, f"{joiner.login} joins the room", system=True)

        async def raw_rooms() -> None:
            page = await rooms.scan(20, None)
            found = [r for _, r in page.rooms if r is not None]
            await asyncio.gather(
                users.get_many({r.creator_login for r in found}), members.counts(r.id for r in found)
            )

        async def raw_participants() -> None:
            room = await rooms.get("bench-history")
            assert room is not None
            page, _ = await asyncio.gather(members.participants(room.id, PAGE, None), members.count(room.id))
            await users.get_many(page.items)

        async def raw_user_rooms() -> None:
            assert await users.get(reader.login) is not None
            page = await members.rooms_of(reader.login, 20, None)
            found = await rooms.get_many(row.room_name for row in page.rows)
            await asyncio.gather(
                users.get_many({r.creator_login for r in found.values()}),
                members.counts(r.id for r in found.values()),
            )

        async def gateway_join() -> dict[str, object]:
            return await target.graphql(JOIN, {"n": "bench-busy"}, token=next(joiners).token)

        rows = [
            *await side_by_side(
                (
                    f"gateway: room.messages(first: {PAGE}) + authors",
                    lambda _: target.graphql(
                        HISTORY, {"n": "bench-history", "first": PAGE}, token=reader.token
                    ),
                ),
                (
                    "driver:  session, room, membership, page, authors",
                    lambda _: counted(raw_history()),
                ),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
            *await side_by_side(
                (
                    "gateway: postRoomMessage",
                    lambda i: target.graphql(
                        POST,
                        {"r": "bench-history", "c": f"gateway {i}"},
                        token=authors[i % AUTHORS].token,
                    ),
                ),
                (
                    "driver:  session, room, insert message",
                    lambda i: counted(raw_post(i)),
                ),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
            *await side_by_side(
                (
                    "gateway: joinRoom (one busy room, LWT)",
                    lambda _: gateway_join(),
                ),
                (
                    "driver:  session, room, LWT, membership, msg",
                    lambda _: counted(raw_join()),
                ),
                requests=JOIN_REQUESTS,
                concurrency=CONCURRENCY,
                warmup=JOIN_WARMUP,
            ),
            *await side_by_side(
                (
                    f"gateway: room.participants(first: {PAGE}) + count",
                    lambda _: target.graphql(PARTICIPANTS, {"n": "bench-history", "first": PAGE}),
                ),
                (
                    "driver:  room, slice, count, users",
                    lambda _: counted(raw_participants()),
                ),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
            *await side_by_side(
                (
                    "gateway: user.rooms(first: 20) + creators",
                    lambda _: target.graphql(USER_ROOMS, {"l": reader.login, "first": 20}),
                ),
                (
                    "driver:  user, slice, rooms, creators, counts",
                    lambda _: counted(raw_user_rooms()),
                ),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
            *await side_by_side(
                (
                    "gateway: rooms(first: 20) + creators",
                    lambda _: target.graphql(ROOMS),
                ),
                (
                    "driver:  scan 20 rooms, creators, counts",
                    lambda _: counted(raw_rooms()),
                ),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
        ]
        report(f"rooms ({REQUESTS} requests, {JOIN_REQUESTS} joins, concurrency {CONCURRENCY})", rows)


if __name__ == "__main__":
    asyncio.run(main())
