"""Helpers of the broker tests: a gateway's broker state and readiness, what a socket received."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
from gql import GraphQLRequest
from gql.transport.exceptions import TransportQueryError

from tests.support.client import Account, Api
from tests.support.redis_helpers import WAIT

RECEIVED = "subscription { messageReceived { id content sender { login } } }"


async def _readyz(api: Api) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as http, http.get(f"{api.base_url}/readyz") as response:
        return response.status, await response.json()


async def _broker_state(api: Api, wanted: str) -> dict[str, Any]:
    for _ in range(WAIT * 10):
        status, body = await _readyz(api)
        if body.get("broker") == wanted:
            assert status == 200, body
            return body
        await asyncio.sleep(0.1)
    raise AssertionError(f"/readyz never reported broker {wanted}")


@contextlib.asynccontextmanager
async def _received(api: Api, account: Account) -> AsyncIterator[asyncio.Queue[Any]]:
    """A running ``messageReceived`` subscription; the queue gets each event, then the
    ``TransportQueryError`` or ``None`` that ended it."""
    events: asyncio.Queue[Any] = asyncio.Queue()

    async def run() -> None:
        try:
            async with api.websocket(account.token) as session:
                async for result in session.subscribe(GraphQLRequest(RECEIVED)):
                    await events.put(result["messageReceived"])
            await events.put(None)
        except TransportQueryError as exc:
            await events.put(exc)

    task = asyncio.create_task(run())
    try:
        yield events
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
