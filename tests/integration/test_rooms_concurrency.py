"""Rooms under concurrent clients: KillrChat's lightweight-transaction rules at work."""

from __future__ import annotations

import asyncio
import random
from datetime import datetime
from uuid import UUID

import pytest
from aiohttp import web

from gateway.rooms.member_store import MemberStore
from gateway.rooms.records import RoomRecord
from gateway.rooms.store import DeleteOutcome, RoomStore
from gateway.server.app import SERVICES
from tests.support.client import Api, Response
from tests.support.rooms import (
    DELETE,
    JOIN,
    LEAVE,
    ROOM,
    create_room,
    thirty_concurrent_joins_are_all_counted,
    user_rooms,
)


async def test_thirty_concurrent_joins_are_all_counted(api: Api) -> None:
    await thirty_concurrent_joins_are_all_counted(api, api)


async def test_join_racing_delete_never_leaves_a_zombie_or_a_half_deleted_room(
    api: Api, app: web.Application
) -> None:
    """Repeated 20 times: either the room is gone and nobody lists it, or it is whole
    and every participant lists it back."""
    db = app[SERVICES].db
    creator = await api.sign_up("owner")
    joiners = await asyncio.gather(*(api.sign_up("racer") for _ in range(6)))
    outcomes = {"deleted": 0, "kept": 0}
    for _ in range(20):
        name = await create_room(api, creator, banner="racing")

        async def delete_soon(room: str = name) -> Response:
            await asyncio.sleep(random.uniform(0, 0.03))
            return await api.call(DELETE, {"n": room}, token=creator.token)

        *joins, deletion = await asyncio.gather(
            *(api.call(JOIN, {"n": name}, token=j.token) for j in joiners), delete_soon()
        )
        for response in joins:
            assert response.codes in ([], ["NOT_FOUND"]), response.errors
        assert deletion.codes in ([], ["CONFLICT"]), deletion.errors

        row = (
            await db.execute(
                "SELECT id, creator_login, created_at, banner FROM rooms WHERE name = ?", (name,)
            )
        ).one()
        if row is None:
            outcomes["deleted"] += 1
            assert deletion.codes == []
            assert (await api.ok(ROOM, {"n": name}))["room"] is None
            for account in (creator, *joiners):
                # Checked before any read could repair it: no membership row is left behind.
                stale = await db.execute(
                    "SELECT room_name FROM user_rooms WHERE login = ? AND room_name = ?",
                    (account.login, name),
                )
                assert stale.rows == []
                assert name not in await user_rooms(api, account.login)
        else:
            outcomes["kept"] += 1
            assert row["id"] is not None
            assert row["creator_login"] == creator.login
            assert row["created_at"] is not None
            assert row["banner"] == "racing"
            room = (await api.ok(ROOM, {"n": name}))["room"]
            participants = {p["login"] for p in room["participants"]["nodes"]}
            joined = {j.login for j, r in zip(joiners, joins, strict=True) if not r.errors}
            assert participants == joined | {creator.login}
            assert room["participantCount"] == len(participants)
            for login in participants:
                assert name in await user_rooms(api, login)
            await api.ok(DELETE, {"n": name}, token=creator.token)
    assert sum(outcomes.values()) == 20


async def test_leaves_racing_joins_keep_rooms_and_memberships_in_step(api: Api) -> None:
    creator = await api.sign_up("host")
    members = await asyncio.gather(*(api.sign_up("member") for _ in range(12)))
    name = await create_room(api, creator)
    for member in members[:6]:
        await api.ok(JOIN, {"n": name}, token=member.token)

    calls = [api.call(LEAVE, {"n": name}, token=m.token) for m in members[:6]]
    calls += [api.call(JOIN, {"n": name}, token=m.token) for m in members[6:]]
    responses = await asyncio.gather(*calls)
    assert all(not r.errors for r in responses)

    room = (await api.ok(ROOM, {"n": name}))["room"]
    assert sorted(p["login"] for p in room["participants"]["nodes"]) == sorted(
        [creator.login, *(m.login for m in members[6:])]
    )
    for member in members[:6]:
        assert await user_rooms(api, member.login) == []
    for member in members[6:]:
        assert await user_rooms(api, member.login) == [name]


async def test_a_join_between_the_read_and_the_delete_is_cleaned_up_without_a_retry(
    api: Api, app: web.Application, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A join lands between the deleter's read and its conditional delete (made certain
    here by joining from inside the delete): the condition carries no participants, so
    the delete applies at once, and the clean-up still finds the late joiner."""
    db = app[SERVICES].db
    creator = await api.sign_up("owner")
    late = await api.sign_up("late")
    name = await create_room(api, creator)
    original = RoomStore.delete
    attempts = 0

    async def join_first(self: RoomStore, room: RoomRecord, creator_login: str) -> DeleteOutcome:
        nonlocal attempts
        if not attempts:
            await api.ok(JOIN, {"n": name}, token=late.token)
        attempts += 1
        return await original(self, room, creator_login)

    monkeypatch.setattr(RoomStore, "delete", join_first)
    response = await api.call(DELETE, {"n": name}, token=creator.token)
    assert response.errors == []
    assert response.extensions["cql"]["lwtRetries"] == 0
    assert attempts == 1
    assert (await api.ok(ROOM, {"n": name}))["room"] is None
    rows = await db.execute("SELECT room_name FROM user_rooms WHERE login = ?", (late.login,))
    assert rows.rows == []


async def test_a_join_that_lands_after_the_clean_up_undoes_itself(
    api: Api, app: web.Application, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other order: the joiner read the room before the delete, and writes its rows
    after the clean-up read the participants. Its own check then sees the room gone:
    NOT_FOUND, and nothing of the join is left."""
    db = app[SERVICES].db
    creator = await api.sign_up("owner")
    late = await api.sign_up("late")
    name = await create_room(api, creator)
    original = MemberStore.add

    async def delete_first(self: MemberStore, room_id: UUID, login: str, joined_at: datetime) -> bool:
        if login == late.login:
            await api.ok(DELETE, {"n": name}, token=creator.token)
        return await original(self, room_id, login, joined_at)

    monkeypatch.setattr(MemberStore, "add", delete_first)
    error = await api.error(JOIN, {"n": name}, token=late.token)
    assert error["extensions"] == {"code": "NOT_FOUND", "field": "name"}
    rows = await db.execute("SELECT room_name FROM user_rooms WHERE login = ?", (late.login,))
    assert rows.rows == []
    assert await user_rooms(api, late.login) == []


async def test_a_busy_room_is_deleted_at_the_first_attempt(api: Api) -> None:
    """Joins and leaves no longer touch the delete's condition: a deletion racing a
    stream of joins and leaves applies without CONFLICT and leaves nobody listing it."""
    creator = await api.sign_up("owner")
    people = await asyncio.gather(*(api.sign_up("busy") for _ in range(12)))
    name = await create_room(api, creator, banner="busy")
    for person in people[:6]:
        await api.ok(JOIN, {"n": name}, token=person.token)
    churn = [api.call(LEAVE, {"n": name}, token=p.token) for p in people[:6]]
    churn += [api.call(JOIN, {"n": name}, token=p.token) for p in people[6:]]
    *_, deletion = await asyncio.gather(*churn, api.call(DELETE, {"n": name}, token=creator.token))
    assert deletion.errors == []
    assert deletion.extensions["cql"]["lwtRetries"] == 0
    for login in [creator.login, *(p.login for p in people)]:
        assert await user_rooms(api, login) == []
