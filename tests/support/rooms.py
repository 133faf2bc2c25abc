"""Queries and helpers of the rooms tests."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from typing import Any

from tests.support.client import Account, Api

ROOM_FIELDS = (
    "name banner createdAt participantCount creator { login } participants(first: 100) { nodes { login } }"
)
CREATE = f"mutation($n: String!, $b: String) {{ createRoom(name: $n, banner: $b) {{ {ROOM_FIELDS} }} }}"
JOIN = f"mutation($n: String!) {{ joinRoom(name: $n) {{ {ROOM_FIELDS} }} }}"
LEAVE = "mutation($n: String!) { leaveRoom(name: $n) }"
DELETE = "mutation($n: String!) { deleteRoom(name: $n) }"
POST = """mutation($r: String!, $c: String!) {
  postRoomMessage(room: $r, content: $c) {
    id content systemMessage postedAt author { login } room { name participantCount }
  }
}"""
ROOM = f"query($n: String!) {{ room(name: $n) {{ {ROOM_FIELDS} }} }}"
HISTORY = """query($n: String!, $first: Int, $after: String) {
  room(name: $n) {
    messages(first: $first, after: $after) {
      edges { cursor node { id content systemMessage postedAt author { login firstname } } }
      pageInfo { hasNextPage endCursor }
    }
  }
}"""
USER_ROOMS = """query($l: String!, $first: Int, $after: String) {
  user(login: $l) {
    rooms(first: $first, after: $after) { nodes { name } pageInfo { hasNextPage endCursor } }
  }
}"""


def room_name(prefix: str = "r") -> str:
    return f"{prefix}{uuid.uuid4().hex[:12]}"


async def create_room(api: Api, account: Account, name: str | None = None, banner: str | None = None) -> str:
    name = name or room_name()
    data = await api.ok(CREATE, {"n": name, "b": banner}, token=account.token)
    assert data["createRoom"]["name"] == name
    return name


async def join(api: Api, account: Account, name: str) -> dict[str, Any]:
    return (await api.ok(JOIN, {"n": name}, token=account.token))["joinRoom"]


async def post(api: Api, account: Account, name: str, content: str) -> dict[str, Any]:
    return (await api.ok(POST, {"r": name, "c": content}, token=account.token))["postRoomMessage"]


async def user_rooms(api: Api, login: str, first: int = 100) -> list[str]:
    """Every room the user lists, following cursors."""
    names: list[str] = []
    after = None
    while True:
        connection = (await api.ok(USER_ROOMS, {"l": login, "first": first, "after": after}))["user"]["rooms"]
        names.extend(r["name"] for r in connection["nodes"])
        if not connection["pageInfo"]["hasNextPage"]:
            return names
        after = connection["pageInfo"]["endCursor"]


async def history(api: Api, account: Account, name: str, first: int = 100) -> list[dict[str, Any]]:
    """The whole history, newest first, following cursors."""
    out: list[dict[str, Any]] = []
    after = None
    while True:
        data = await api.ok(HISTORY, {"n": name, "first": first, "after": after}, token=account.token)
        connection = data["room"]["messages"]
        out.extend(edge["node"] for edge in connection["edges"])
        if not connection["pageInfo"]["hasNextPage"]:
            return out
        after = connection["pageInfo"]["endCursor"]


async def thirty_concurrent_joins_are_all_counted(api: Api, other_api: Api) -> None:
    """Thirty users join one room at once, alternating between two gateways: every join counts."""
    instances = itertools.cycle([api, other_api])
    creator = await api.sign_up("host")
    joiners = await asyncio.gather(*(api.sign_up("joiner") for _ in range(30)))
    name = await create_room(api, creator)

    responses = await asyncio.gather(
        *(next(instances).call(JOIN, {"n": name}, token=j.token) for j in joiners)
    )
    assert [r.errors for r in responses] == [[]] * 30

    room = (await api.ok(ROOM, {"n": name}))["room"]
    assert room["participantCount"] == 31
    assert sorted(p["login"] for p in room["participants"]["nodes"]) == sorted(
        [creator.login, *(j.login for j in joiners)]
    )
    listed = await asyncio.gather(*(user_rooms(api, j.login) for j in joiners))
    assert all(rooms == [name] for rooms in listed)
    joins = [m for m in await history(api, creator, name) if m["content"].endswith(" joins the room")]
    assert sorted(m["content"] for m in joins) == sorted(f"{j.login} joins the room" for j in joiners)
