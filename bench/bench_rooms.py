"""Rooms: history reads, posting, joining a busy room and listing rooms through the
gateway, beside the same Cassandra work done on the driver.

Run: ``.venv/bin/python -m bench.bench_rooms``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bench.harness import Target, counted, gateway_under_test, measure, report
from gateway.db import clock
from gateway.graph.pubsub import InProcessPubSub
from gateway.rooms.history import RoomHistory
from gateway.rooms.service import RoomService
from gateway.rooms.store import RoomStore
from gateway.users.store import SessionStore, UserRecord, UserStore

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
        service = RoomService(db, rooms, history, InProcessPubSub())
        users = UserStore(db, settings)
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

        async def raw_history() -> None:
            login = await sessions.login_of(reader.token)
            room = await rooms.get("bench-history")
            assert login is not None and room is not None
            page = await history.page(room.name, room.id, first=PAGE, after=None)
            await users.get_many({m.author_login for _, m in page.items if m.author_login})

        async def raw_post(i: int) -> None:
            author = authors[i % AUTHORS]
            assert await sessions.login_of(author.token) == author.login
            room = await rooms.get("bench-history")
            assert room is not None and author.login in room.participants
            await history.append(room.name, room.id, author.login, f"raw {i}")

        async def raw_join() -> None:
            joiner = next(joiners)
            assert await sessions.login_of(joiner.token) == joiner.login
            room = await rooms.get("bench-busy")
            assert room is not None
            assert await rooms.add_participant(room.name, joiner.login)
            await rooms.record_membership(joiner.login, room.name, clock.now())
            await history.append(room.name, room.id, None, f"{joiner.login} joins the room", system=True)

        async def raw_rooms() -> None:
            page = await rooms.scan(20, None)
            await users.get_many({r.creator_login for _, r in page.rooms if r is not None})

        async def gateway_join() -> dict[str, object]:
            return await target.graphql(JOIN, {"n": "bench-busy"}, token=next(joiners).token)

        rows = [
            await measure(
                f"gateway: room.messages(first: {PAGE}) + authors",
                lambda _: target.graphql(HISTORY, {"n": "bench-history", "first": PAGE}, token=reader.token),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
            await measure(
                "driver:  session, room, page, authors",
                lambda _: counted(raw_history()),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
            await measure(
                "gateway: postRoomMessage",
                lambda i: target.graphql(
                    POST,
                    {"r": "bench-history", "c": f"gateway {i}"},
                    token=authors[i % AUTHORS].token,
                ),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
            await measure(
                "driver:  session, room, insert message",
                lambda i: counted(raw_post(i)),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
            await measure(
                "gateway: joinRoom (one busy room, LWT)",
                lambda _: gateway_join(),
                requests=JOIN_REQUESTS,
                concurrency=CONCURRENCY,
                warmup=JOIN_WARMUP,
            ),
            await measure(
                "driver:  session, room, LWT, membership, msg",
                lambda _: counted(raw_join()),
                requests=JOIN_REQUESTS,
                concurrency=CONCURRENCY,
                warmup=JOIN_WARMUP,
            ),
            await measure(
                "gateway: rooms(first: 20) + creators",
                lambda _: target.graphql(ROOMS),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
            await measure(
                "driver:  scan 20 rooms, creators",
                lambda _: counted(raw_rooms()),
                requests=REQUESTS,
                concurrency=CONCURRENCY,
            ),
        ]
        report(f"rooms ({REQUESTS} requests, {JOIN_REQUESTS} joins, concurrency {CONCURRENCY})", rows)


if __name__ == "__main__":
    asyncio.run(main())
