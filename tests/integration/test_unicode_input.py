"""Text that is not Unicode (a lone surrogate, which JSON can spell as ``"\\ud800"``) is
refused as ``BAD_USER_INPUT`` naming its field, before anything is written, over HTTP
and over the WebSocket alike."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.client import Api
from tests.support.messenger import SEND, partners
from tests.support.rooms import create_room, history

LONE = "hello \ud800 there"
POST_ROOM = "mutation($r: String!, $c: String!) { postRoomMessage(room: $r, content: $c) { id } }"
SIGN_UP = "mutation($i: SignUpInput!) { signUp(input: $i) { token } }"


@pytest.mark.parametrize("transport", ["http", "websocket"])
async def test_a_lone_surrogate_in_a_message_writes_nothing(api: Api, transport: str) -> None:
    alice, bob = await api.sign_up("lone"), await api.sign_up("loneb")
    name = await create_room(api, alice)
    call = api.call if transport == "http" else api.ws_call
    cases: list[tuple[str, dict[str, Any], str]] = [
        (SEND, {"to": bob.login, "content": LONE}, "content"),
        (POST_ROOM, {"r": name, "c": LONE}, "content"),
    ]
    for query, variables, field in cases:
        response = await call(query, variables, token=alice.token)
        assert response.codes == ["BAD_USER_INPUT"], response.errors
        assert response.errors[0]["extensions"]["field"] == field
    assert await partners(api, bob) == []  # no unread count, no last message, no row
    assert await partners(api, alice) == []
    assert [m["content"] for m in await history(api, alice, name)] == [f"{alice.login} created the room"]


async def test_a_lone_surrogate_in_a_name_is_refused_at_sign_up(api: Api) -> None:
    response = await api.call(
        SIGN_UP,
        {
            "i": {
                "login": "lonesignup",
                "password": "correct-horse",
                "firstname": "A\udc00",
                "lastname": "B",
                "email": "lone@example.com",
            }
        },
    )
    assert response.codes == ["BAD_USER_INPUT"]
    assert response.errors[0]["extensions"]["field"] == "firstname"
    assert (await api.ok('{ user(login: "lonesignup") { login } }'))["user"] is None
