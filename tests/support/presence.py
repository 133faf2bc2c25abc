"""Queries and helpers of the presence tests."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

from tests.support.client import Account, Api
from tests.support.ws_protocol import TRANSPORT_WS, Socket

PRESENCE = "query($l: String!) { user(login: $l) { presence { online lastSeenAt } } }"
CHANGED = """subscription($l: [String!]!) {
  presenceChanged(logins: $l) { user { login } presence { online lastSeenAt } }
}"""


@contextlib.asynccontextmanager
async def online(api: Api, account: Account) -> AsyncIterator[Socket]:
    """A signed-in socket of ``account``, open for the block."""
    async with Socket.open(api, TRANSPORT_WS) as socket:
        acked = await socket.init(account.token)
        assert acked is not None and acked["type"] == "connection_ack", acked
        yield socket


async def presence_of(api: Api, viewer: Account, login: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = (await api.ok(PRESENCE, {"l": login}, token=viewer.token))["user"][
        "presence"
    ]
    return found


async def next_event(socket: Socket) -> dict[str, Any]:
    message = await socket.receive()
    assert message is not None and message["type"] == "next", message
    assert "errors" not in message["payload"], message
    event: dict[str, Any] = message["payload"]["data"]["presenceChanged"]
    return event
