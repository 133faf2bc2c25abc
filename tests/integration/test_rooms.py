"""Chat rooms through a real GraphQL client against the real node: life cycle, rules, validation.

The helpers here are shared by the other ``test_rooms_*`` modules.
"""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web

from tests.support.client import Api
from tests.support.rooms import (
    CREATE,
    DELETE,
    HISTORY,
    JOIN,
    LEAVE,
    POST,
    ROOM,
    create_room,
    history,
    join,
    post,
    room_name,
    user_rooms,
)


async def test_room_life_cycle_with_system_messages(api: Api) -> None:
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    name = room_name("Life")

    created = (await api.ok(CREATE, {"n": name, "b": "  All about life  "}, token=alice.token))["createRoom"]
    assert created["banner"] == "All about life"
    assert created["creator"]["login"] == alice.login
    assert created["participants"]["nodes"] == [{"login": alice.login}]
    assert created["participantCount"] == 1
    assert created["createdAt"].endswith("Z")

    joined = await join(api, bob, name)
    assert sorted(p["login"] for p in joined["participants"]["nodes"]) == sorted([alice.login, bob.login])
    assert joined["participantCount"] == 2
    assert await user_rooms(api, bob.login) == [name]
    assert await user_rooms(api, alice.login) == [name]

    first = await post(api, bob, name, "  hello everyone  ")
    assert first["content"] == "hello everyone"
    assert first["systemMessage"] is False
    assert first["author"] == {"login": bob.login}
    assert first["room"] == {"name": name, "participantCount": 2}
    await post(api, alice, name, "hi bob")

    assert (await api.ok(LEAVE, {"n": name}, token=bob.token))["leaveRoom"] is True
    assert await user_rooms(api, bob.login) == []
    room = (await api.ok(ROOM, {"n": name}))["room"]
    assert room["participants"]["nodes"] == [{"login": alice.login}]
    # Leaving again changes nothing.
    assert (await api.ok(LEAVE, {"n": name}, token=bob.token))["leaveRoom"] is False

    messages = await history(api, alice, name)
    assert [(m["content"], m["systemMessage"], m["author"]) for m in messages] == [
        (f"{bob.login} leaves the room", True, None),
        ("hi bob", False, {"login": alice.login, "firstname": "Test"}),
        ("hello everyone", False, {"login": bob.login, "firstname": "Test"}),
        (f"{bob.login} joins the room", True, None),
        (f"{alice.login} created the room", True, None),
    ]
    assert [m["id"] for m in messages][2] == first["id"]
    assert messages == sorted(messages, key=lambda m: m["postedAt"], reverse=True)

    assert (await api.ok(DELETE, {"n": name}, token=alice.token))["deleteRoom"] is True
    assert (await api.ok(ROOM, {"n": name}))["room"] is None
    assert await user_rooms(api, alice.login) == []


async def test_joining_twice_is_harmless(api: Api) -> None:
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    name = await create_room(api, alice)
    await join(api, bob, name)
    again = await join(api, bob, name)
    assert again["participantCount"] == 2
    assert sorted(p["login"] for p in again["participants"]["nodes"]) == sorted([alice.login, bob.login])
    assert await user_rooms(api, bob.login) == [name]
    joins = [m for m in await history(api, alice, name) if m["content"] == f"{bob.login} joins the room"]
    assert len(joins) == 1
    # The creator joining their own room is harmless too.
    assert (await join(api, alice, name))["participantCount"] == 2


async def test_the_creator_may_leave_and_still_delete_the_empty_room(api: Api) -> None:
    alice = await api.sign_up("alice")
    name = await create_room(api, alice)
    assert (await api.ok(LEAVE, {"n": name}, token=alice.token))["leaveRoom"] is True
    room = (await api.ok(ROOM, {"n": name}))["room"]
    assert room["participantCount"] == 0
    assert room["creator"] == {"login": alice.login}
    assert await user_rooms(api, alice.login) == []
    error = await api.error(POST, {"r": name, "c": "still here?"}, token=alice.token)
    assert error["extensions"]["code"] == "FORBIDDEN"
    # An empty participants set is null in Cassandra; the delete's condition still matches it.
    assert (await api.ok(DELETE, {"n": name}, token=alice.token))["deleteRoom"] is True
    assert (await api.ok(ROOM, {"n": name}))["room"] is None


async def test_only_the_creator_deletes_and_everything_goes(api: Api, app: web.Application) -> None:
    from gateway.server.app import SERVICES

    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    carol = await api.sign_up("carol")
    name = await create_room(api, alice)
    await join(api, bob, name)
    await join(api, carol, name)
    await post(api, bob, name, "soon gone")
    db = app[SERVICES].db
    room = (await db.execute("SELECT id FROM rooms WHERE name = ?", (name,))).one()
    assert room is not None
    room_id = room["id"]
    index = await db.execute("SELECT bucket FROM room_message_buckets WHERE room_id = ?", (room_id,))
    buckets = [row["bucket"] for row in index.rows]
    assert buckets

    for outsider in (bob, carol):
        error = await api.error(DELETE, {"n": name}, token=outsider.token)
        assert error["extensions"]["code"] == "FORBIDDEN"
    assert (await api.ok(ROOM, {"n": name}))["room"]["participantCount"] == 3

    assert (await api.ok(DELETE, {"n": name}, token=alice.token))["deleteRoom"] is True
    assert (await api.ok(ROOM, {"n": name}))["room"] is None
    # The rows are gone, not just hidden (checked before any read could repair them):
    # no membership, no history, no bucket index.
    for account in (alice, bob, carol):
        rows = await db.execute("SELECT room_name FROM user_rooms WHERE login = ?", (account.login,))
        assert rows.rows == []
        assert await user_rooms(api, account.login) == []
    index = await db.execute("SELECT bucket FROM room_message_buckets WHERE room_id = ?", (room_id,))
    assert index.rows == []
    for bucket in buckets:
        messages = await db.execute(
            "SELECT message_id FROM room_messages WHERE room_id = ? AND bucket = ?", (room_id, bucket)
        )
        assert messages.rows == []
    assert (await db.execute("SELECT * FROM rooms WHERE name = ?", (name,))).rows == []
    assert (await db.execute("SELECT login FROM room_participants WHERE room_id = ?", (room_id,))).rows == []

    # A new room of the same name starts with a clean history.
    await create_room(api, bob, name)
    assert [m["content"] for m in await history(api, bob, name)] == [f"{bob.login} created the room"]

    error = await api.error(DELETE, {"n": room_name()}, token=alice.token)
    assert error["extensions"]["code"] == "NOT_FOUND"


async def test_user_rooms_skips_stale_entries_and_repairs_them_off_the_read(
    api: Api, app: web.Application
) -> None:
    """The window of a deletion: the room is gone (or was created again) but a
    participant's rooms still name the old incarnation."""
    from gateway.db.clock import new_timeuuid
    from gateway.rooms.member_store import MemberStore
    from gateway.server.app import SERVICES

    alice = await api.sign_up("alice")
    kept = await create_room(api, alice)
    db = app[SERVICES].db
    gone = room_name("gone")
    for name in (gone, kept):  # a dead room, and a dead incarnation of a live name
        await db.execute(
            "INSERT INTO user_rooms (login, room_name, room_id, joined_at)"
            " VALUES (?, ?, ?, toTimestamp(now()))",
            (alice.login, name, new_timeuuid()),
        )
    assert await user_rooms(api, alice.login) == [kept]
    await app[SERVICES].store(MemberStore).repairs_settled()
    rows = await db.execute("SELECT room_name FROM user_rooms WHERE login = ?", (alice.login,))
    assert [r["room_name"] for r in rows.rows] == [kept]


async def test_post_requires_a_participant_and_an_existing_room(api: Api) -> None:
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    name = await create_room(api, alice)
    error = await api.error(POST, {"r": name, "c": "let me in"}, token=bob.token)
    assert error["extensions"]["code"] == "FORBIDDEN"
    error = await api.error(POST, {"r": room_name(), "c": "anyone?"}, token=bob.token)
    assert error["extensions"]["code"] == "NOT_FOUND"
    error = await api.error(JOIN, {"n": room_name()}, token=bob.token)
    assert error["extensions"]["code"] == "NOT_FOUND"
    # Reading the history is for participants too.
    error = await api.error(HISTORY, {"n": name}, token=bob.token)
    assert error["extensions"]["code"] == "FORBIDDEN"
    error = await api.error(HISTORY, {"n": name})
    assert error["extensions"]["code"] == "UNAUTHENTICATED"
    assert [m["content"] for m in await history(api, alice, name)] == [f"{alice.login} created the room"]


async def test_a_non_member_previews_the_room_with_an_error_on_its_messages_only(api: Api) -> None:
    alice = await api.sign_up("alice")
    bob = await api.sign_up("bob")
    name = await create_room(api, alice, banner="come in")
    await post(api, alice, name, "members only")
    preview = """query($n: String!) { room(name: $n) {
      name banner participantCount participants(first: 5) { nodes { login } }
      messages(first: 5) { nodes { content } } } }"""
    for outsider, code in ((bob, "FORBIDDEN"), (None, "UNAUTHENTICATED")):
        response = await api.call(preview, {"n": name}, token=outsider.token if outsider else None)
        assert response.data == {
            "room": {
                "name": name,
                "banner": "come in",
                "participantCount": 1,
                "participants": {"nodes": [{"login": alice.login}]},
                "messages": None,
            }
        }
        (error,) = response.errors
        assert (error["extensions"]["code"], error["path"]) == (code, ["room", "messages"])
    member = await api.ok(preview, {"n": name}, token=alice.token)
    assert member["room"]["messages"]["nodes"][0]["content"] == "members only"


async def test_create_conflicts_on_a_taken_name_and_exactly_one_racer_wins(api: Api) -> None:
    import asyncio

    accounts = [await api.sign_up("racer") for _ in range(10)]
    name = room_name()
    responses = await asyncio.gather(
        *(api.call(CREATE, {"n": name, "b": a.login}, token=a.token) for a in accounts)
    )
    winners = [r for r in responses if not r.errors]
    assert len(winners) == 1
    assert all(r.codes == ["CONFLICT"] for r in responses if r.errors)
    assert all(r.errors[0]["extensions"]["field"] == "name" for r in responses if r.errors)
    room = (await api.ok(ROOM, {"n": name}))["room"]
    winner = winners[0].result["createRoom"]["creator"]["login"]
    assert room["creator"]["login"] == winner
    assert room["banner"] == winner
    assert room["participants"]["nodes"] == [{"login": winner}]


async def test_the_acting_user_is_the_token_user(api: Api) -> None:
    cases: list[tuple[str, dict[str, Any]]] = [
        (CREATE, {"n": room_name(), "b": None}),
        (JOIN, {"n": room_name()}),
        (LEAVE, {"n": room_name()}),
        (DELETE, {"n": room_name()}),
        (POST, {"r": room_name(), "c": "hi"}),
    ]
    for query, variables in cases:
        error = await api.error(query, variables)
        assert error["extensions"]["code"] == "UNAUTHENTICATED"


async def test_room_query_is_null_for_missing_or_invalid_names(api: Api) -> None:
    assert (await api.ok(ROOM, {"n": room_name()}))["room"] is None
    assert (await api.ok(ROOM, {"n": "!"}))["room"] is None


@pytest.mark.parametrize(
    ("query", "variables", "field"),
    [
        (CREATE, {"n": "ab", "b": None}, "name"),
        (CREATE, {"n": "a" * 32, "b": None}, "name"),
        (CREATE, {"n": "_abc", "b": None}, "name"),
        (CREATE, {"n": "ab c", "b": None}, "name"),
        (CREATE, {"n": " abc", "b": None}, "name"),
        (CREATE, {"n": "abc!", "b": None}, "name"),
        (CREATE, {"n": "validname", "b": "x" * 201}, "banner"),
        (JOIN, {"n": "a/b"}, "name"),
        (LEAVE, {"n": "x"}, "name"),
        (DELETE, {"n": "x" * 40}, "name"),
        (POST, {"r": "no", "c": "hello"}, "room"),
        (POST, {"r": "validname", "c": "   "}, "content"),
        (POST, {"r": "validname", "c": "x" * 4001}, "content"),
    ],
)
async def test_validation_names_the_field(
    api: Api, query: str, variables: dict[str, Any], field: str
) -> None:
    account = await api.sign_up("val")
    error = await api.error(query, variables, token=account.token)
    assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": field}


async def test_limits_are_inclusive(api: Api) -> None:
    alice = await api.sign_up("alice")
    name = "A" + "b" * 30  # 31 characters, mixed case
    data = await api.ok(CREATE, {"n": name, "b": "x" * 200}, token=alice.token)
    assert data["createRoom"]["name"] == name
    assert (await api.ok(ROOM, {"n": name.lower()}))["room"] is None  # names are case-sensitive
    message = await post(api, alice, name, "y" * 4000)
    assert len(message["content"]) == 4000
    blank = await api.ok(CREATE, {"n": room_name(), "b": "   "}, token=alice.token)
    assert blank["createRoom"]["banner"] is None
    await api.ok(DELETE, {"n": name}, token=alice.token)


async def test_bad_history_cursor_is_bad_user_input(api: Api) -> None:
    alice = await api.sign_up("alice")
    name = await create_room(api, alice)
    for cursor in ["garbage!", "eyJ4IjoxfQ"]:
        error = await api.error(HISTORY, {"n": name, "after": cursor}, token=alice.token)
        assert error["extensions"] == {"code": "BAD_USER_INPUT", "field": "after"}
    error = await api.error(HISTORY, {"n": name, "first": 101}, token=alice.token)
    assert error["extensions"]["code"] == "QUERY_TOO_COMPLEX"
