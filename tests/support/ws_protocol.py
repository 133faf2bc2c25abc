"""A raw WebSocket speaking ``graphql-transport-ws`` or legacy ``graphql-ws``, message by
message: the GraphQL clients hide close codes and refusals that the tests must see."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import AsyncIterator
from typing import Any

import aiohttp

from tests.support.client import Api

TRANSPORT_WS = "graphql-transport-ws"
LEGACY_WS = "graphql-ws"
PROTOCOLS = (TRANSPORT_WS, LEGACY_WS)
#: Seconds any single wait of these tests may take before it counts as "never".
WAIT = 20.0


class Socket:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse, protocol: str) -> None:
        self.ws = ws
        self.protocol = protocol
        self._ids = itertools.count(1)

    @classmethod
    @contextlib.asynccontextmanager
    async def open(
        cls, api: Api, protocol: str, headers: dict[str, str] | None = None
    ) -> AsyncIterator[Socket]:
        """A socket on ``api``'s endpoint; ``headers`` go with the upgrade request."""
        url = api.url.replace("http://", "ws://", 1)
        async with aiohttp.ClientSession() as http:
            async with http.ws_connect(url, protocols=[protocol], headers=headers) as ws:
                yield cls(ws, protocol)

    async def send(self, message: dict[str, Any]) -> None:
        await self.ws.send_json(message)

    async def receive(self) -> dict[str, Any] | None:
        """The next protocol message (legacy keep-alives skipped); None once the socket closed."""
        while True:
            message = await self.ws.receive(timeout=WAIT)
            if message.type != aiohttp.WSMsgType.TEXT:
                return None
            data: dict[str, Any] = message.json()
            if data.get("type") != "ka":
                return data

    async def init(
        self, token: str | None = None, payload: dict[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """Send ``connection_init`` (the token as the contract says) and return the answer."""
        if payload is None:
            payload = {"authorization": f"Bearer {token}"} if token is not None else {}
        await self.send({"type": "connection_init", "payload": payload})
        return await self.receive()

    async def start(self, query: str, variables: dict[str, Any] | None = None) -> str:
        """Start an operation; its id."""
        operation_id = str(next(self._ids))
        kind = "subscribe" if self.protocol == TRANSPORT_WS else "start"
        payload = {"query": query, "variables": variables}
        await self.send({"id": operation_id, "type": kind, "payload": payload})
        return operation_id

    async def result(self, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """Run a query or mutation: its one result payload, or None when the socket closed instead."""
        operation_id = await self.start(query, variables)
        message = await self.receive()
        if message is None:
            return None
        assert message["id"] == operation_id and message["type"] in {"next", "data"}, message
        payload: dict[str, Any] = message["payload"]
        done = await self.receive()
        assert done is None or (done["id"] == operation_id and done["type"] == "complete"), done
        return payload

    async def close_code(self) -> int | None:
        """Wait for the server to close the socket (reading what comes before); its close code."""
        while await self.receive() is not None:
            pass
        return self.ws.close_code
