"""Every connection answers a tampered cursor with ``BAD_USER_INPUT`` on ``after`` (or with a
page, when the tampered cursor still names a place), never with an internal error.

A cursor is opaque to clients but not to attackers: its bytes decode to buckets,
timeuuids, slots and logins that end up bound into CQL, where a bucket past the
column's 32 bits or a slot past the timestamp range would fail in the driver.
"""

from __future__ import annotations

import base64
import json
import struct
import uuid
from typing import Any

import pytest

from tests.support.blog import comment_input, publish
from tests.support.client import Account, Api
from tests.support.messenger import send
from tests.support.rooms import create_room, post

CONNECTIONS = {
    "posts": "query($a: String) { posts(first: 2, after: $a) { nodes { slug } } }",
    "posts by tag": 'query($a: String) { posts(tag: "cursors", first: 2, after: $a) { nodes { slug } } }',
    "user posts": "query($a: String, $l: String!) { user(login: $l) { posts(first: 2, after: $a)"
    " { nodes { slug } } } }",
    "comments": "query($a: String, $s: String!) { post(slug: $s) { comments(first: 2, after: $a)"
    " { nodes { text } } } }",
    "rooms": "query($a: String) { rooms(first: 2, after: $a) { nodes { name } } }",
    "user rooms": "query($a: String, $l: String!) { user(login: $l) { rooms(first: 2, after: $a)"
    " { nodes { name } } } }",
    "participants": "query($a: String, $r: String!) { room(name: $r) { participants(first: 2, after: $a)"
    " { nodes { login } } } }",
    "room messages": "query($a: String, $r: String!) { room(name: $r) { messages(first: 2, after: $a)"
    " { nodes { content } } } }",
    "talk partners": "query($a: String) { me { talkPartners(first: 2, after: $a) { nodes"
    " { partner { login } } } } }",
    "conversation": "query($a: String, $w: String!) { me { conversation(with: $w) { messages(first: 2,"
    " after: $a) { nodes { content } } } } }",
    "folder": 'query($a: String) { me { folder(label: "inbox") { emails(first: 2, after: $a)'
    " { nodes { subject } } } } }",
    "contacts": "query($a: String) { me { contacts(first: 2, after: $a) { nodes { networkId } } } }",
}


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _position(bucket: int, item: uuid.UUID | None = None) -> str:
    return _b64(struct.pack(">q16s", bucket, (item or uuid.uuid1()).bytes))


def _spot(slot: int, login: str = "somebody") -> str:
    return _b64(struct.pack(">q", slot) + login.encode())


TAMPERED = [
    _position(2**40),
    _position(2**31),
    _position(-1),
    _position(-(2**63)),
    _position(202611, uuid.uuid4()),
    _spot(2**62),
    _spot(-(2**62)),
    _spot(2**63 - 1, "x" * 200),
    _b64(json.dumps({"b": 2**70, "i": str(uuid.uuid1()), "l": "x", "n": "r", "o": 2**70}).encode()),
    _b64(json.dumps({"i": str(uuid.uuid4())}).encode()),
    _b64(json.dumps({"n": "phone", "h": "00" * 32}).encode()),
    _b64(json.dumps([1, 2, 3]).encode()),
    _b64(b"\xff" * 40),
    "not base64 at all!",
    "",
]


@pytest.fixture(scope="module")
async def viewer(api: Api) -> tuple[Account, dict[str, str]]:
    alice = await api.sign_up("cursors")
    bob = await api.sign_up("cursorsb")
    await send(api, alice, bob.login, "hello")
    room = await create_room(api, alice)
    await post(api, alice, room, "hi room")
    slug = (await publish(api, alice.token, tags=["cursors"]))["slug"]
    await api.ok(
        "mutation($s: String!, $i: CommentInput!) { addComment(slug: $s, input: $i) { id } }",
        {"s": slug, "i": comment_input()},
    )
    return alice, {"l": alice.login, "s": slug, "r": room, "w": bob.login}


@pytest.mark.parametrize("name", list(CONNECTIONS))
async def test_a_tampered_cursor_is_bad_user_input_never_an_internal_error(
    api: Api, viewer: tuple[Account, dict[str, str]], name: str
) -> None:
    account, names = viewer
    query = CONNECTIONS[name]
    for cursor in TAMPERED:
        variables: dict[str, Any] = {k: v for k, v in names.items() if f"${k}" in query}
        variables["a"] = cursor
        response = await api.call(query, variables, token=account.token)
        assert set(response.codes) <= {"BAD_USER_INPUT"}, (name, cursor, response.errors)
        for error in response.errors:
            assert error["extensions"].get("field") == "after", (name, cursor, error)
