"""Room membership at scale: paged participants and user rooms, both bounds, big deletions,
the listing that reads no participants, and the backfill from the old participants set."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from gateway.db.clock import new_timeuuid
from gateway.rooms.store import RoomStore
from gateway.server.app import SERVICES
from gateway.settings import Settings
from tests.conftest import ServerFactory
from tests.support.cli import run_cli
from tests.support.client import Account, Api
from tests.support.rooms import DELETE, JOIN, LEAVE, ROOM, create_room, join, room_name, user_rooms

PARTICIPANTS = """query($n: String!, $first: Int, $after: String) {
  room(name: $n) {
    participantCount
    participants(first: $first, after: $after) {
      edges { cursor node { login firstname } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"""
USER_ROOMS = """query($l: String!, $first: Int, $after: String) {
  user(login: $l) {
    rooms(first: $first, after: $after) {
      edges { cursor node { name participantCount creator { login } } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"""
COUNT = "query($n: String!) { room(name: $n) { participantCount } }"


async def _pages(
    api: Api, query: str, variables: dict[str, Any], path: tuple[str, str], first: int
) -> list[list[str]]:
    """Every page of a connection, as the node keys of each page, following endCursor."""
    pages: list[list[str]] = []
    after = None
    key = "login" if path[1] == "participants" else "name"
    while True:
        data = await api.ok(query, {**variables, "first": first, "after": after})
        connection = data[path[0]][path[1]]
        assert len(connection["edges"]) <= first
        pages.append([edge["node"][key] for edge in connection["edges"]])
        if not connection["pageInfo"]["hasNextPage"]:
            return pages
        after = connection["pageInfo"]["endCursor"]
        assert after == connection["edges"][-1]["cursor"]


async def _count(api: Api, name: str) -> int:
    return int((await api.ok(COUNT, {"n": name}))["room"]["participantCount"])


async def test_participants_page_by_login_without_gap_or_repeat(api: Api) -> None:
    host = await api.sign_up("host")
    people = await asyncio.gather(*(api.sign_up("member") for _ in range(13)))
    name = await create_room(api, host)
    await asyncio.gather(*(join(api, p, name) for p in people))
    everyone = sorted([host.login, *(p.login for p in people)])

    pages = await _pages(api, PARTICIPANTS, {"n": name}, ("room", "participants"), 4)
    assert len(pages) == 4
    assert [login for page in pages for login in page] == everyone
    assert await _count(api, name) == 14

    small = await api.call(PARTICIPANTS, {"n": name, "first": 5})
    large = await api.call(PARTICIPANTS, {"n": name, "first": 50})
    assert len(small.result["room"]["participants"]["edges"]) == 5
    assert len(large.result["room"]["participants"]["edges"]) == 14
    # the room, the participant count, one slice of participants, one batched read of their profiles
    assert small.statements == large.statements == 4

    cursor = small.result["room"]["participants"]["pageInfo"]["endCursor"]
    for bad in ("garbage!", "eyJsIjoxfQ"):  # {"l": 1}
        error = await api.error(PARTICIPANTS, {"n": name, "first": 5, "after": bad})
        assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "after"}
    rest = await api.ok(PARTICIPANTS, {"n": name, "first": 50, "after": cursor})
    assert [e["node"]["login"] for e in rest["room"]["participants"]["edges"]] == everyone[5:]


async def test_user_rooms_page_by_name_and_cost_the_same_for_any_page_size(api: Api) -> None:
    collector = await api.sign_up("collector")
    creators = await asyncio.gather(*(api.sign_up("maker") for _ in range(11)))
    names = await asyncio.gather(*(create_room(api, c) for c in creators))
    await asyncio.gather(*(join(api, collector, n) for n in names))

    pages = await _pages(api, USER_ROOMS, {"l": collector.login}, ("user", "rooms"), 4)
    assert len(pages) == 3
    assert [n for page in pages for n in page] == sorted(names)

    small = await api.call(USER_ROOMS, {"l": collector.login, "first": 5})
    large = await api.call(USER_ROOMS, {"l": collector.login, "first": 50})
    listed = large.result["user"]["rooms"]["edges"]
    assert {e["node"]["creator"]["login"] for e in listed} == {c.login for c in creators}
    assert {e["node"]["participantCount"] for e in listed} == {2}
    # the user, one slice of their rooms, one batched read of the rooms, one of their
    # creators, one of their participant counts
    assert small.statements == large.statements == 5


async def test_listed_rooms_carry_each_their_own_participant_count(api: Api) -> None:
    """A list loads its rooms' counts in one read with the list; each room keeps its own,
    and a room fetched alone in the same request counts the same."""
    collector = await api.sign_up("counter")
    names = await asyncio.gather(*(create_room(api, collector) for _ in range(3)))
    for extra, name in enumerate(names):
        joiners = await asyncio.gather(*(api.sign_up("joiner") for _ in range(extra)))
        await asyncio.gather(*(join(api, joiner, name) for joiner in joiners))
    query = """query($l: String!, $n: String!) {
      user(login: $l) { rooms(first: 10) { nodes { id name participantCount } } }
      room(name: $n) { name participantCount }
    }"""
    response = await api.call(query, {"l": collector.login, "n": names[2]})
    assert response.errors == []
    listed = {node["name"]: node["participantCount"] for node in response.result["user"]["rooms"]["nodes"]}
    assert listed == {names[0]: 1, names[1]: 2, names[2]: 3}
    assert response.result["room"] == {"name": names[2], "participantCount": 3}
    ids = [node["id"] for node in response.result["user"]["rooms"]["nodes"]]
    found = await api.ok("query($id: ID!) { node(id: $id) { ... on Room { name } } }", {"id": ids[0]})
    assert found["node"]["name"] in names


async def test_many_users_rooms_in_one_request_share_their_batched_reads(api: Api) -> None:
    people = await asyncio.gather(*(api.sign_up("many") for _ in range(3)))
    names = await asyncio.gather(*(create_room(api, p) for p in people for _ in range(2)))
    query = """query($a: String!, $b: String!, $c: String!) {
      a: user(login: $a) { rooms(first: 10) { nodes { name creator { login } } } }
      b: user(login: $b) { rooms(first: 10) { nodes { name creator { login } } } }
      c: user(login: $c) { rooms(first: 10) { nodes { name creator { login } } } }
    }"""
    response = await api.call(query, dict(zip("abc", (p.login for p in people), strict=True)))
    assert response.errors == []
    listed = [n["name"] for key in "abc" for n in response.result[key]["rooms"]["nodes"]]
    assert sorted(listed) == sorted(names)
    # one batched read of the users, a slice per user, one read of all six rooms (their
    # creators are the users already loaded)
    assert response.statements == 1 + 3 + 1


async def test_a_full_room_refuses_the_next_join_with_a_clear_conflict(make_server: ServerFactory) -> None:
    api, _ = await make_server(room_max_participants=3)
    host, first, second, late = [await api.sign_up("cap") for _ in range(4)]
    name = await create_room(api, host)
    await join(api, first, name)
    await join(api, second, name)

    error = await api.error(JOIN, {"n": name}, token=late.token)
    assert error["extensions"] == {"code": "CONFLICT", "field": "name"}
    assert "is full (3 participants)" in error["message"]
    assert await user_rooms(api, late.login) == []
    # A participant joining again is still harmless.
    assert (await join(api, first, name))["participantCount"] == 3
    # Once someone leaves there is room again.
    await api.ok(LEAVE, {"n": name}, token=second.token)
    assert (await join(api, late, name))["participantCount"] == 3


async def test_joins_racing_for_the_last_places_never_overfill_the_room(make_server: ServerFactory) -> None:
    api, app = await make_server(room_max_participants=5)
    db = app[SERVICES].db
    host = await api.sign_up("host")
    racers = await asyncio.gather(*(api.sign_up("racer") for _ in range(16)))
    name = await create_room(api, host)

    responses = await asyncio.gather(*(api.call(JOIN, {"n": name}, token=r.token) for r in racers))
    assert all(r.codes in ([], ["CONFLICT"]) for r in responses)
    admitted = {r.login for r, response in zip(racers, responses, strict=True) if not response.errors}
    assert 1 <= len(admitted) <= 4
    row = (await db.execute("SELECT id FROM rooms WHERE name = ?", (name,))).one()
    assert row is not None
    room_id = row["id"]
    rows = await db.execute("SELECT login FROM room_participants WHERE room_id = ?", (room_id,))
    assert {row["login"] for row in rows.rows} == admitted | {host.login}
    assert await _count(api, name) == len(admitted) + 1
    for racer in racers:
        assert await user_rooms(api, racer.login) == ([name] if racer.login in admitted else [])


async def test_the_rooms_per_user_cap_holds_for_joins_creates_and_races(make_server: ServerFactory) -> None:
    api, app = await make_server(rooms_per_user_max=3)
    db = app[SERVICES].db
    owners = await asyncio.gather(*(api.sign_up("owner") for _ in range(8)))
    names = await asyncio.gather(*(create_room(api, o) for o in owners))
    busy = await api.sign_up("busy")
    for name in names[:3]:
        await join(api, busy, name)
    error = await api.error(JOIN, {"n": names[3]}, token=busy.token)
    assert error["extensions"] == {"code": "CONFLICT", "field": "name"}
    assert "You are in 3 rooms" in error["message"]
    assert await _count(api, names[3]) == 1

    # Creating a room is joining it: refused too, and the room does not stay behind.
    fresh = room_name()
    error = await api.error(
        "mutation($n: String!) { createRoom(name: $n) { name } }", {"n": fresh}, token=busy.token
    )
    assert error["extensions"] == {"code": "CONFLICT", "field": "name"}
    assert (await db.execute("SELECT name FROM rooms WHERE name = ?", (fresh,))).rows == []

    # Many joins of one user at once: the cap still holds.
    racer = await api.sign_up("racer")
    responses = await asyncio.gather(*(api.call(JOIN, {"n": n}, token=racer.token) for n in names))
    assert all(r.codes in ([], ["CONFLICT"]) for r in responses)
    joined = [n for n, r in zip(names, responses, strict=True) if not r.errors]
    assert 1 <= len(joined) <= 3
    assert await user_rooms(api, racer.login) == sorted(joined)
    rows = await db.execute("SELECT room_name FROM user_rooms WHERE login = ?", (racer.login,))
    assert sorted(row["room_name"] for row in rows.rows) == sorted(joined)


async def test_deleting_a_room_of_120_members_leaves_no_membership_behind(
    api: Api, app: web.Application
) -> None:
    db = app[SERVICES].db
    host = await api.sign_up("host")
    members: list[Account] = []
    for _ in range(4):
        members.extend(await asyncio.gather(*(api.sign_up("crowd") for _ in range(30))))
    name = await create_room(api, host)
    for start in range(0, 120, 30):
        await asyncio.gather(*(join(api, m, name) for m in members[start : start + 30]))
    assert await _count(api, name) == 121
    row = (await db.execute("SELECT id FROM rooms WHERE name = ?", (name,))).one()
    assert row is not None
    room_id = row["id"]

    response = await api.call(DELETE, {"n": name}, token=host.token)
    assert response.errors == []
    # Checked on the table, before any read could repair anything.
    for account in (host, *members):
        rows = await db.execute("SELECT room_name FROM user_rooms WHERE login = ?", (account.login,))
        assert rows.rows == []
    assert (await db.execute("SELECT login FROM room_participants WHERE room_id = ?", (room_id,))).rows == []


async def test_the_rooms_listing_reads_no_participants(make_server: ServerFactory) -> None:
    api, app = await make_server()
    owner = await api.sign_up("owner")
    await asyncio.gather(*(create_room(api, owner) for _ in range(3)))
    db = app[SERVICES].db
    before = set(db._prepared)
    listing = "{ rooms(first: 50) { edges { node { name banner creator { login } } } } }"
    response = await api.call(listing)
    assert response.errors == []
    used = set(db._prepared) - before
    scans = [cql for cql in used if "FROM rooms" in cql]
    assert scans and all("participants" not in cql for cql in used)
    counted = await api.call("{ rooms(first: 50) { edges { node { name participantCount } } } }")
    assert counted.errors == []
    # Counts come from the counter table; nothing this gateway ever prepared reads the set.
    assert [cql for cql in db._prepared if "FROM rooms " in cql and "participants" in cql] == []


async def test_backfill_copies_the_old_participants_sets(
    api: Api, app: web.Application, base_settings: Settings
) -> None:
    """Rooms written the old way (the set in the rooms row) list their members once
    ``gateway backfill rooms`` ran, and running it again changes nothing."""
    db = app[SERVICES].db
    creator = await api.sign_up("old")
    people = await asyncio.gather(*(api.sign_up("oldmember") for _ in range(7)))
    name, empty = room_name("old"), room_name("empty")
    logins = {creator.login, *(p.login for p in people)}
    for room, members in ((name, logins), (empty, None)):
        await db.execute(
            "INSERT INTO rooms (name, id, creator_login, created_at, banner, participants)"
            " VALUES (?, ?, ?, toTimestamp(now()), ?, ?)",
            (room, new_timeuuid(), creator.login, "from before", members),
        )
    assert await _count(api, name) == 0

    code, output = await run_cli(base_settings, "backfill", "rooms")
    assert code == 0, output
    assert "participant rows added" in output
    pages = await _pages(api, PARTICIPANTS, {"n": name}, ("room", "participants"), 3)
    assert [login for page in pages for login in page] == sorted(logins)
    assert await _count(api, name) == 8
    assert await _count(api, empty) == 0
    for login in logins:
        assert name in await user_rooms(api, login)

    # Idempotent, also after a new member joined through today's tables.
    newcomer = await api.sign_up("new")
    await join(api, newcomer, name)
    code, output = await run_cli(base_settings, "backfill", "rooms")
    assert code == 0, output
    assert await _count(api, name) == 9
    # Members copied from the set post and leave like any other.
    await api.ok(LEAVE, {"n": name}, token=people[0].token)
    assert await _count(api, name) == 8
    assert await user_rooms(api, people[0].login) == []


async def test_rooms_recount_sets_a_drifted_participant_count_to_the_rows(
    api: Api, app: web.Application, base_settings: Settings
) -> None:
    """A join or leave whose counter update was lost leaves the count one off; the repair
    counts the rows again."""
    owner, guest = await api.sign_up("rcown"), await api.sign_up("rcguest")
    name = await create_room(api, owner)
    await api.ok(JOIN, {"n": name}, token=guest.token)
    room = await RoomStore(app[SERVICES].db, base_settings).get(name)
    assert room is not None
    await app[SERVICES].db.execute(
        "UPDATE room_participant_counts SET participants = participants + 1 WHERE room_id = ?", (room.id,)
    )
    assert (await api.ok(ROOM, {"n": name}))["room"]["participantCount"] == 3

    code, output = await run_cli(base_settings, "rooms-recount", name)
    assert code == 0, output
    assert f"room {name}: 2 participants  (was 3)" in output
    assert (await api.ok(ROOM, {"n": name}))["room"]["participantCount"] == 2
    code, output = await run_cli(base_settings, "rooms-recount", name)
    assert code == 0 and "was" not in output, output
    code, output = await run_cli(base_settings, "rooms-recount", "no-such-room-here")
    assert code == 2 and "no-such-room-here" in output
