"""Rooms under concurrent clients: KillrChat's lightweight-transaction rules at work."""

from __future__ import annotations

import asyncio
import random

import pytest
from aiohttp import web

from gateway.app import SERVICES
from gateway.rooms.service import DELETE_ATTEMPTS
from gateway.rooms.store import DeleteOutcome, RoomRecord, RoomStore
from tests.client import Api, Response
from tests.test_rooms import DELETE, JOIN, LEAVE, ROOM, create_room, history, user_rooms


async def test_thirty_concurrent_joins_are_all_counted(api: Api) -> None:
    creator = await api.sign_up("host")
    joiners = await asyncio.gather(*(api.sign_up("joiner") for _ in range(30)))
    name = await create_room(api, creator)

    responses = await asyncio.gather(*(api.call(JOIN, {"n": name}, token=j.token) for j in joiners))
    assert [r.errors for r in responses] == [[]] * 30

    room = (await api.ok(ROOM, {"n": name}))["room"]
    assert room["participantCount"] == 31
    assert sorted(p["login"] for p in room["participants"]) == sorted(
        [creator.login, *(j.login for j in joiners)]
    )
    listed = await asyncio.gather(*(user_rooms(api, j.login) for j in joiners))
    assert all(rooms == [name] for rooms in listed)
    joins = [m for m in await history(api, creator, name) if m["content"].endswith(" joins the room")]
    assert sorted(m["content"] for m in joins) == sorted(f"{j.login} joins the room" for j in joiners)


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
                "SELECT id, creator_login, created_at, banner, participants FROM rooms WHERE name = ?",
                (name,),
            )
        ).one()
        if row is None:
            outcomes["deleted"] += 1
            assert deletion.codes == []
            assert (await api.ok(ROOM, {"n": name}))["room"] is None
            for account in (creator, *joiners):
                assert name not in await user_rooms(api, account.login)
                # Whatever a late join wrote was repaired by that read.
                stale = await db.execute(
                    "SELECT room_name FROM rooms_by_user WHERE login = ? AND room_name = ?",
                    (account.login, name),
                )
                assert stale.rows == []
        else:
            outcomes["kept"] += 1
            assert row["id"] is not None
            assert row["creator_login"] == creator.login
            assert row["created_at"] is not None
            assert row["banner"] == "racing"
            participants = set(row["participants"] or ())
            joined = {j.login for j, r in zip(joiners, joins, strict=True) if not r.errors}
            assert joined <= participants
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
    assert sorted(p["login"] for p in room["participants"]) == sorted(
        [creator.login, *(m.login for m in members[6:])]
    )
    for member in members[:6]:
        assert await user_rooms(api, member.login) == []
    for member in members[6:]:
        assert await user_rooms(api, member.login) == [name]


async def test_delete_retries_past_a_join_and_cleans_up_the_late_joiner(
    api: Api, app: web.Application, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A join lands between the deleter's read and its conditional delete (made certain
    here by joining from inside the first attempt): the condition fails, the gateway
    retries with the participants Cassandra returned, and the late joiner is not missed."""
    db = app[SERVICES].db
    creator = await api.sign_up("owner")
    late = await api.sign_up("late")
    name = await create_room(api, creator)
    original = RoomStore.delete_if_unchanged
    attempts: list[frozenset[str]] = []

    async def join_first(self: RoomStore, room: RoomRecord, creator_login: str) -> DeleteOutcome:
        if not attempts:
            await api.ok(JOIN, {"n": name}, token=late.token)
        attempts.append(room.participants)
        return await original(self, room, creator_login)

    monkeypatch.setattr(RoomStore, "delete_if_unchanged", join_first)
    response = await api.call(DELETE, {"n": name}, token=creator.token)
    assert response.errors == []
    assert response.extensions["cql"]["lwtRetries"] == 1
    assert attempts == [frozenset({creator.login}), frozenset({creator.login, late.login})]
    assert (await api.ok(ROOM, {"n": name}))["room"] is None
    rows = await db.execute("SELECT room_name FROM rooms_by_user WHERE login = ?", (late.login,))
    assert rows.rows == []


async def test_delete_answers_conflict_when_participants_keep_changing(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every attempt loses to a new join: after its bounded retries the gateway answers
    CONFLICT, and the room is left whole with every participant listing it."""
    creator = await api.sign_up("owner")
    joiners = [await api.sign_up("busy") for _ in range(DELETE_ATTEMPTS)]
    name = await create_room(api, creator, banner="busy")
    original = RoomStore.delete_if_unchanged
    calls = 0

    async def join_every_time(self: RoomStore, room: RoomRecord, creator_login: str) -> DeleteOutcome:
        nonlocal calls
        await api.ok(JOIN, {"n": name}, token=joiners[calls].token)
        calls += 1
        return await original(self, room, creator_login)

    monkeypatch.setattr(RoomStore, "delete_if_unchanged", join_every_time)
    error = await api.error(DELETE, {"n": name}, token=creator.token)
    monkeypatch.undo()
    assert error["extensions"] == {"code": "CONFLICT", "field": "name"}
    assert calls == DELETE_ATTEMPTS
    room = (await api.ok(ROOM, {"n": name}))["room"]
    assert room["banner"] == "busy"
    assert room["participantCount"] == DELETE_ATTEMPTS + 1
    for login in [creator.login, *(j.login for j in joiners)]:
        assert await user_rooms(api, login) == [name]
    assert (await api.ok(DELETE, {"n": name}, token=creator.token))["deleteRoom"] is True
